"""The control store: tables, their partition maps, storage nodes (desired state).

Local mode keeps it in etcd; the Kubernetes control plane will implement the same
interface over the Table and Partition custom resources.
"""
