"""The storage node: partitions of many tables on one RocksDB, made durable by one WAL."""
