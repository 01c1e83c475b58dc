"""`partita credentials list|add|remove`: manage the access keys a router accepts.

The commands edit `<data-dir>/credentials.json` (format: docs/credentials.md); a
running router notices the change within a second, so no restart is needed.
Output is JSON on stdout; `add` also prints `export` lines for a shell, unless
`--json` or `--env` asks for only one of the two.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from partita.router import credentials as creds

DEFAULT_DATA_DIR = "./.partita"

# DynamoDB's table-name rule; "*" means every table.
_TABLE_NAME = re.compile(r"[a-zA-Z0-9_.-]{3,255}")


def _tables(value: str) -> tuple[str, ...]:
    names = tuple(t.strip() for t in value.split(",") if t.strip())
    if not names:
        raise argparse.ArgumentTypeError("give at least one table name, or '*'")
    for name in names:
        if name != creds.ALL_TABLES and not _TABLE_NAME.fullmatch(name):
            raise argparse.ArgumentTypeError(
                f"{name!r} is not a valid table name (3-255 characters of a-z A-Z 0-9 _ . -)"
            )
    if creds.ALL_TABLES in names and len(names) > 1:
        raise argparse.ArgumentTypeError("'*' already means every table; give it alone")
    return names


def _print_json(doc: Any) -> None:
    print(json.dumps(doc, indent=2))


def _fail(message: str) -> int:
    print(json.dumps({"error": message}), file=sys.stderr)
    return 1


def _path(args: argparse.Namespace) -> Path:
    return creds.credentials_path(args.data_dir)


def cmd_list(args: argparse.Namespace) -> int:
    try:
        items = creds.list_credentials(_path(args))
    except creds.CredentialsFileError as e:
        return _fail(str(e))
    if args.show_secrets:
        _print_json([c.to_json() for c in items])
    else:
        _print_json([c.public_json() for c in items])
    return 0


def cmd_add(args: argparse.Namespace) -> int:
    try:
        cred = creds.create_credential(
            _path(args), name=args.name, description=args.description, tables=args.tables
        )
    except (creds.CredentialsFileError, OSError) as e:
        return _fail(str(e))
    doc = cred.to_json()
    del doc["session_token"]
    if args.output != "env":
        _print_json(doc)
    if args.output != "json":
        print(f"export AWS_ACCESS_KEY_ID={cred.access_key_id}")
        print(f"export AWS_SECRET_ACCESS_KEY={cred.secret_access_key}")
    return 0


def cmd_remove(args: argparse.Namespace) -> int:
    if (args.access_key_id is None) == (args.name is None):
        return _fail("give either an access key id or --name")
    if args.access_key_id is not None:
        key: str = args.access_key_id

        def match(c: creds.Credential) -> bool:
            return c.access_key_id == key
    else:
        name: str = args.name

        def match(c: creds.Credential) -> bool:
            return c.name == name

    try:
        gone = creds.remove_credentials(_path(args), match)
    except (creds.CredentialsFileError, OSError) as e:
        return _fail(str(e))
    if not gone:
        return _fail(
            f"no credential with access key {args.access_key_id}"
            if args.access_key_id is not None
            else f"no credential named {args.name!r}"
        )
    _print_json({"removed": [c.access_key_id for c in gone]})
    return 0


def _data_dir(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--data-dir",
        default=DEFAULT_DATA_DIR,
        metavar="DIR",
        help=f"directory holding {creds.FILE_NAME} (default: {DEFAULT_DATA_DIR})",
    )


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add `credentials` and its sub-commands; each sets `func(args) -> exit code`."""
    parser = subparsers.add_parser(
        "credentials",
        help="manage access keys (list, add, remove)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )

    def usage(_: argparse.Namespace) -> int:
        parser.print_help(sys.stderr)
        return 2

    parser.set_defaults(func=usage)
    sub = parser.add_subparsers(dest="credentials_command", metavar="{list,add,remove}")

    p_list = sub.add_parser("list", help="list access keys (secrets hidden)")
    _data_dir(p_list)
    p_list.add_argument("--show-secrets", action="store_true", help="include secret access keys")
    p_list.set_defaults(func=cmd_list)

    p_add = sub.add_parser("add", help="create an access key and print it")
    _data_dir(p_add)
    p_add.add_argument("--name", default="", help="a name for the key's owner")
    p_add.add_argument("--description", default="", help="free text")
    p_add.add_argument(
        "--tables",
        type=_tables,
        default=(creds.ALL_TABLES,),
        metavar="T1,T2",
        help="tables the key may use, comma-separated (default: '*', every table)",
    )
    out = p_add.add_mutually_exclusive_group()
    out.add_argument("--json", dest="output", action="store_const", const="json", help="print only JSON")
    out.add_argument(
        "--env", dest="output", action="store_const", const="env", help="print only export lines"
    )
    p_add.set_defaults(func=cmd_add, output="both")

    p_remove = sub.add_parser("remove", help="delete an access key (by id, or every key with a name)")
    _data_dir(p_remove)
    p_remove.add_argument("access_key_id", nargs="?", help="the access key id to delete")
    p_remove.add_argument("--name", help="delete every key with this name instead")
    p_remove.set_defaults(func=cmd_remove)
