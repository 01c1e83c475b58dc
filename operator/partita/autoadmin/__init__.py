"""The autoadmin: pure decisions over observed state (lifecycle, placement, later split,
migration, repair), driven by kopf handlers in Kubernetes and by a plain loop locally.

Until the autoadmin runs as its own process, the local cluster's routers drive the
lifecycle decisions; every transition is a compare-and-swap, so any number of drivers
is safe.
"""
