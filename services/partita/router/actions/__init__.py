"""Per-operation execution on the router: one module per DynamoDB operation."""
