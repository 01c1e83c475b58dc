"""The autoadmin as a Kubernetes operator (kopf): Table and Partition resources in,
Partition resources, storage StatefulSets and status out.

Layout: `naming` (every name and label), `fleet` (the storage fleet's configuration),
`decisions` (pure: partition plans, placement, status and conditions), `builders`
(pure: the desired Kubernetes objects), `api` (a thin Kubernetes API client),
`replicas` (the interface to the storage nodes' admin RPC), `handlers` (thin kopf
handlers over all of the above) and `main` (running it).
"""
