"""PartiQL for DynamoDB (ExecuteStatement, BatchExecuteStatement): statements parsed
(`lexer`, `parser`, into `syntax`) and planned as the DynamoDB requests that carry them
out (`plan`). Pure; the router runs the plans."""
