"""PynamoDB against Partita: a hash+range model, conditional saves, updates, query, scan.

PynamoDB builds its own requests (expressions with generated placeholders, its own
retry and paging logic), so this proves compatibility with a real ORM, not only boto3.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from pynamodb.attributes import ListAttribute, NumberAttribute, UnicodeAttribute, UnicodeSetAttribute
from pynamodb.exceptions import PutError, UpdateError
from pynamodb.models import Model

from tests.compat.helpers import PYTESTMARK

pytestmark = PYTESTMARK


@pytest.fixture(scope="module")
def Song(cluster: Any) -> Any:
    cred = cluster.credentials()

    class SongModel(Model):
        class Meta:
            table_name = f"songs-{uuid.uuid4().hex[:8]}"
            host = cluster.endpoint
            region = "us-east-1"
            aws_access_key_id = cred["access_key_id"]
            aws_secret_access_key = cred["secret_access_key"]
            billing_mode = "PAY_PER_REQUEST"

        artist = UnicodeAttribute(hash_key=True)
        title = UnicodeAttribute(range_key=True)
        year = NumberAttribute(null=True)
        plays = NumberAttribute(default=0)
        tags = UnicodeSetAttribute(null=True)
        notes = ListAttribute(of=UnicodeAttribute, null=True)

    SongModel.create_table(wait=True)
    return SongModel


def test_save_and_get_round_trip(Song: Any) -> None:
    Song("Bach", "Partita No. 2", year=1723, tags={"violin", "solo"}).save()
    got = Song.get("Bach", "Partita No. 2", consistent_read=True)
    assert (got.year, got.plays, got.tags) == (1723, 0, {"violin", "solo"})


def test_conditional_save_refuses_to_overwrite(Song: Any) -> None:
    song = Song("Bach", "Goldberg Variations", year=1741)
    song.save(condition=Song.artist.does_not_exist())
    with pytest.raises(PutError) as err:
        Song("Bach", "Goldberg Variations", year=1999).save(condition=Song.artist.does_not_exist())
    assert err.value.cause_response_code == "ConditionalCheckFailedException"
    assert Song.get("Bach", "Goldberg Variations").year == 1741


def test_update_actions_apply_atomically(Song: Any) -> None:
    song = Song("Handel", "Messiah", year=1741, tags={"choral"})
    song.save()
    song.update(
        actions=[
            Song.plays.add(5),
            Song.tags.add({"oratorio"}),
            Song.notes.set(["Dublin"]),
            Song.year.remove(),
        ]
    )
    song.update(actions=[Song.notes.set(Song.notes.append(["London"])), Song.plays.set(Song.plays + 1)])
    got = Song.get("Handel", "Messiah", consistent_read=True)
    assert (got.plays, got.tags, got.notes, got.year) == (
        6,
        {"choral", "oratorio"},
        ["Dublin", "London"],
        None,
    )
    with pytest.raises(UpdateError) as err:
        song.update(actions=[Song.plays.add(1)], condition=Song.plays > 100)
    assert Song.get("Handel", "Messiah", consistent_read=True).plays == 6
    assert err.value.cause_response_code == "ConditionalCheckFailedException"


def test_query_with_range_condition_and_filter(Song: Any) -> None:
    for i in range(8):
        Song("Vivaldi", f"Concerto {i:02d}", year=1720 + i, plays=i).save()
    hits = list(
        Song.query(
            "Vivaldi",
            range_key_condition=Song.title.startswith("Concerto"),
            filter_condition=Song.plays >= 5,
            scan_index_forward=False,
        )
    )
    assert [s.title for s in hits] == ["Concerto 07", "Concerto 06", "Concerto 05"]


def test_scan_paginates_through_every_item(Song: Any) -> None:
    for i in range(25):
        Song("Scarlatti", f"Sonata K.{i:03d}").save()
    result = Song.scan(Song.artist == "Scarlatti", page_size=4)
    titles = sorted(s.title for s in result)
    assert titles == [f"Sonata K.{i:03d}" for i in range(25)]
    # Every item of the table was read, a few per page, and the last page ended it.
    assert result.total_count == 25
    assert result.last_evaluated_key is None


def test_batch_write_and_batch_get(Song: Any) -> None:
    with Song.batch_write() as batch:
        for i in range(30):
            batch.save(Song("Telemann", f"Fantasia {i}"))
    keys = [("Telemann", f"Fantasia {i}") for i in range(30)]
    assert sorted(s.title for s in Song.batch_get(keys)) == sorted(f"Fantasia {i}" for i in range(30))
