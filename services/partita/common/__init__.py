"""Pieces every Partita service shares: errors, configuration, key encoding."""
