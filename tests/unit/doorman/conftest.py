"""A real etcd for the election tests (the control-store tests' session fixture)."""

from tests.unit.control.conftest import etcd

__all__ = ["etcd"]
