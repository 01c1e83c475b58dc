"""The autoadmin: reconciles the desired table specs into partitions, placement and
lifecycle. One pure core (`reconcile.decide`, with `partition_count` and `placement`)
driven locally by `local.LocalAutoadmin` (a loop over the etcd control store, run as
the `autoadmin` process) and in Kubernetes by kopf handlers over the same decisions.
"""
