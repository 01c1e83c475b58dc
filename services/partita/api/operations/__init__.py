"""Per-operation request validation: one module per DynamoDB operation, each `validate(body)`."""
