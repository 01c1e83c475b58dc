"""The DynamoDB data model and operations: values, items, expressions, per-operation logic."""
