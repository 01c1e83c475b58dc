"""The `partita` command and its sub-commands."""
