"""Client-side libraries for applications that talk to Partita (or DynamoDB) with boto3.

Nothing here imports the server: every module depends on boto3/botocore only, so the
same code runs against real DynamoDB.
"""
