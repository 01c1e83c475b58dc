"""`partita up --tls-cert --tls-key`: the DynamoDB endpoint over HTTPS, with boto3 verifying
the router's certificate (a throwaway CA), and nothing answered in plain HTTP."""

from __future__ import annotations

import http.client
import json
import uuid
from pathlib import Path

import pytest

from bench.tls_endpoint import issue_certificate
from tests.integration.cluster import running, wait_active

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("cluster-tls")]

PLAIN_HTTP_DENIED = {
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Deny", "Principal": "*", "Action": "dynamodb:*", "Resource": "*",
                   "Condition": {"Bool": {"aws:SecureTransport": "false"}}}],
}  # fmt: skip


def test_a_cluster_started_with_a_certificate_serves_dynamodb_over_https_only(tmp_path: Path) -> None:
    cert, key, bundle = issue_certificate(tmp_path)
    with running(
        tmp_path / "cluster", "--tls-cert", str(cert), "--tls-key", str(key), "--replication-factor", "1"
    ) as c:
        endpoint = f"https://127.0.0.1:{c.ports['router']}"
        assert json.loads((c.data_dir / "cluster.json").read_text())["endpoint"] == endpoint
        assert f"DynamoDB endpoint: {endpoint}" in c.read_log()
        ddb = c.client(endpoint_url=endpoint, verify=str(bundle))
        table = f"tls-{uuid.uuid4().hex[:8]}"
        ddb.create_table(
            TableName=table,
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        wait_active(ddb, table, timeout=30)
        item = {"pk": {"S": "over-tls"}, "v": {"N": "1"}}
        ddb.put_item(TableName=table, Item=item)
        assert ddb.get_item(TableName=table, Key={"pk": item["pk"]}, ConsistentRead=True)["Item"] == item

        # A policy refusing plain HTTP (aws:SecureTransport) lets these requests through
        # (the one router's table cache holds a policy once PutResourcePolicy answered).
        arn = ddb.describe_table(TableName=table)["Table"]["TableArn"]
        ddb.put_resource_policy(ResourceArn=arn, Policy=json.dumps(PLAIN_HTTP_DENIED))
        assert ddb.get_item(TableName=table, Key={"pk": item["pk"]}, ConsistentRead=True)["Item"] == item

        # Plain HTTP on the same port gets no DynamoDB answer: the TLS handshake fails.
        plain = http.client.HTTPConnection("127.0.0.1", c.ports["router"], timeout=10)
        try:
            with pytest.raises((http.client.HTTPException, ConnectionError)):
                plain.request(
                    "POST", "/", body=b"{}", headers={"X-Amz-Target": "DynamoDB_20120810.ListTables"}
                )
                plain.getresponse()
        finally:
            plain.close()
