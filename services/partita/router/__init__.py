"""The request router: DynamoDB's HTTP API in front of the storage nodes."""
