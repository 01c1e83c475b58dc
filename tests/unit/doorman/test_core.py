"""The Doorman server core without any I/O: repository validation and lookup, the
repeat-request rule, learning mode, safe capacity, mastership redirects and the tree."""

from __future__ import annotations

from pathlib import Path

import pytest

from partita._proto import doorman_pb2 as pb
from partita.doorman.core import InvalidRequest, ServerCore
from partita.doorman.repository import ConfigError, ResourceRepository, template

FAIR = pb.Algorithm.FAIR_SHARE


def repo(*templates: pb.ResourceTemplate) -> ResourceRepository:
    return ResourceRepository(pb.ResourceRepository(resources=list(templates)))


def ask(
    core: ServerCore, client: str, resource: str, wants: float, now: float, has: float | None = None
) -> pb.ResourceResponse | pb.GetCapacityResponse:
    request = pb.GetCapacityRequest(client_id=client)
    r = request.resource.add(resource_id=resource, wants=wants, priority=1)
    if has is not None:
        r.has.capacity = has
    out = core.get_capacity(request, now)
    return out.response[0] if out.response else out


def master(repository: ResourceRepository, at: float = 0.0) -> ServerCore:
    core = ServerCore("root", repository)
    core.on_election(True, "127.0.0.1:1", at)
    return core


# --- repository ---------------------------------------------------------------------


def test_exact_identifier_wins_over_an_earlier_glob() -> None:
    r = repo(template("table/*", 10), template("table/Music/wcu", 20), template("*", 30))
    assert r.find("table/Music/wcu").capacity == 20
    assert r.find("table/Music/rcu").capacity == 10
    assert r.find("other").capacity == 30


def test_star_matches_identifiers_with_slashes() -> None:
    assert repo(template("*", 5)).find("table/a/b").capacity == 5


@pytest.mark.parametrize(
    "templates,message",
    [
        ([template("a", 1)], '"*"'),
        ([template("*", 1), template("a", 1)], "must be the last"),
        ([template("*", 1, refresh_interval=0)], "refresh_interval must be at least 1"),
        (
            [template("*", 1, lease_length=5, refresh_interval=10)],
            "lease_length must be at least refresh_interval",
        ),
        ([template("*", -1)], "capacity must not be negative"),
        ([pb.ResourceTemplate(identifier_glob="*", capacity=1)], "must specify an algorithm"),
        ([template("a", 1), template("a", 2), template("*", 1)], "appears twice"),
    ],
)
def test_invalid_repositories_are_refused(templates: list[pb.ResourceTemplate], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        repo(*templates)


def test_repository_loads_from_yaml_and_json(tmp_path: Path) -> None:
    yaml_file = tmp_path / "doorman.yaml"
    yaml_file.write_text(
        "resources:\n"
        "  - identifier_glob: table/*/wcu\n"
        "    capacity: 100\n"
        "    safe_capacity: 5\n"
        "    algorithm: {kind: PROPORTIONAL_SHARE, lease_length: 30, refresh_interval: 5}\n"
        "  - identifier_glob: '*'\n"
        "    capacity: 0\n"
        "    algorithm: {kind: FAIR_SHARE, lease_length: 60, refresh_interval: 16}\n"
    )
    loaded = ResourceRepository.from_file(yaml_file).find("table/x/wcu")
    assert (loaded.capacity, loaded.safe_capacity, loaded.algorithm.kind) == (
        100,
        5,
        pb.Algorithm.PROPORTIONAL_SHARE,
    )
    json_file = tmp_path / "doorman.json"
    json_file.write_text(
        '{"resources": [{"identifier_glob": "*", "capacity": 7, "algorithm": {"kind": "STATIC", "lease_length": 2, "refresh_interval": 1}}]}'
    )
    assert ResourceRepository.from_file(json_file).find("x").capacity == 7


@pytest.mark.parametrize("text", ["resources: [", "[1, 2]", '{"resources": [{"nope": 1}]}', "{}"])
def test_malformed_configuration_files_are_config_errors(text: str) -> None:
    with pytest.raises(ConfigError):
        ResourceRepository.from_text(text)


def test_reload_applies_the_new_capacity_to_existing_resources() -> None:
    core = master(repo(template("*", 100, learning_mode_duration=0)))
    assert ask(core, "a", "r", 500, 1.0).gets.capacity == 100
    core.load_repository(repo(template("*", 40, learning_mode_duration=0)))
    assert ask(core, "a", "r", 500, 20.0).gets.capacity == 40


# --- requests -----------------------------------------------------------------------


def test_a_repeat_request_within_five_seconds_does_not_run_the_algorithm() -> None:
    core = master(repo(template("*", 100, learning_mode_duration=0)))
    first = ask(core, "a", "r", 10, 1.0)
    repeat = ask(core, "a", "r", 90, 3.0)
    assert repeat.gets == first.gets  # the lease already held, unchanged
    later = ask(core, "a", "r", 90, 6.5)
    assert later.gets.capacity == 90


def test_the_repeat_rule_never_delays_a_client_that_waited_its_refresh_interval() -> None:
    core = master(repo(template("*", 100, refresh_interval=2, lease_length=10, learning_mode_duration=0)))
    ask(core, "a", "r", 10, 1.0)
    assert ask(core, "a", "r", 50, 3.0).gets.capacity == 50


def test_learning_mode_echoes_leases_then_the_algorithm_takes_over() -> None:
    core = master(repo(template("*", 100, lease_length=60, refresh_interval=10)), at=1000.0)
    # The old master gave "a" 80 and "b" 60 (over capacity together): echo them.
    assert ask(core, "a", "r", 90, 1001.0, has=80).gets.capacity == 80
    assert ask(core, "b", "r", 90, 1002.0, has=60).gets.capacity == 60
    assert ask(core, "c", "r", 90, 1003.0).gets.capacity == 0  # new client: nothing yet
    # Learning ends lease_length after the victory; then fair shares, within capacity.
    shares = [ask(core, c, "r", 90, 1061.0 + i * 6, has=None).gets.capacity for i, c in enumerate("abcabc")]
    assert sum(shares[-3:]) <= 100 + 1e-9
    assert shares[-3:] == pytest.approx([100 / 3] * 3)


def test_dynamic_safe_capacity_is_capacity_per_client_unless_configured() -> None:
    core = master(
        repo(
            template("fixed", 100, safe_capacity=7, learning_mode_duration=0),
            template("*", 100, learning_mode_duration=0),
        )
    )
    ask(core, "a", "r", 1, 1.0)
    assert ask(core, "b", "r", 1, 1.0).safe_capacity == 50
    assert ask(core, "a", "fixed", 1, 1.0).safe_capacity == 7


def test_leases_expire_and_free_their_capacity() -> None:
    core = master(repo(template("*", 100, lease_length=10, refresh_interval=5, learning_mode_duration=0)))
    assert ask(core, "a", "r", 100, 1.0).gets.expiry_time == 11
    assert ask(core, "b", "r", 100, 2.0).gets.capacity == 0
    assert ask(core, "b", "r", 100, 12.0).gets.capacity == 100  # a's lease ran out


def test_release_capacity_frees_the_lease_at_once() -> None:
    core = master(repo(template("*", 100, learning_mode_duration=0)))
    ask(core, "a", "r", 100, 1.0)
    core.release_capacity(pb.ReleaseCapacityRequest(client_id="a", resource_id=["r"]))
    assert ask(core, "b", "r", 100, 2.0).gets.capacity == 100


def test_a_non_master_redirects_to_the_master_and_keeps_no_state() -> None:
    core = ServerCore("standby", repo(template("*", 100)))
    core.on_election(False, "10.0.0.1:5101", 0.0)
    out = core.get_capacity(
        pb.GetCapacityRequest(client_id="a", resource=[pb.ResourceRequest(resource_id="r", wants=1)]), 1.0
    )
    assert not out.response and out.mastership.master_address == "10.0.0.1:5101"
    assert (
        core.release_capacity(pb.ReleaseCapacityRequest(client_id="a")).mastership.master_address
        == "10.0.0.1:5101"
    )
    assert core.discovery() == pb.DiscoveryResponse(
        is_master=False, mastership=pb.Mastership(master_address="10.0.0.1:5101")
    )
    assert core.resources == {}


def test_losing_the_election_forgets_every_lease() -> None:
    core = master(repo(template("*", 100, learning_mode_duration=0)))
    ask(core, "a", "r", 10, 1.0)
    core.on_election(False, None, 2.0)
    out = ask(core, "a", "r", 10, 3.0)
    assert isinstance(out, pb.GetCapacityResponse) and out.HasField("mastership")
    assert not out.mastership.HasField("master_address")  # the master is unknown
    assert core.resources == {}


@pytest.mark.parametrize(
    "request_",
    [
        pb.GetCapacityRequest(client_id="", resource=[pb.ResourceRequest(resource_id="r", wants=1)]),
        pb.GetCapacityRequest(client_id="a", resource=[pb.ResourceRequest(resource_id="", wants=1)]),
        pb.GetCapacityRequest(client_id="a", resource=[pb.ResourceRequest(resource_id="r", wants=-1)]),
        pb.GetCapacityRequest(
            client_id="a", resource=[pb.ResourceRequest(resource_id="r", wants=float("nan"))]
        ),
        pb.GetCapacityRequest(
            client_id="a", resource=[pb.ResourceRequest(resource_id="r"), pb.ResourceRequest(resource_id="r")]
        ),
    ],
)
def test_malformed_requests_are_refused_without_changing_state(request_: pb.GetCapacityRequest) -> None:
    core = master(repo(template("*", 100)))
    with pytest.raises(InvalidRequest):
        core.get_capacity(request_, 1.0)
    assert core.resources == {}


def test_server_capacity_requests_need_at_least_one_subclient_per_band() -> None:
    core = master(repo(template("*", 100)))
    bad = pb.GetServerCapacityRequest(
        server_id="leaf",
        resource=[
            pb.ServerCapacityResourceRequest(
                resource_id="r", wants=[pb.PriorityBandAggregate(priority=1, num_clients=0, wants=5)]
            )
        ],
    )
    with pytest.raises(InvalidRequest, match="subclients"):
        core.get_server_capacity(bad, 1.0)


# --- the tree -----------------------------------------------------------------------


def test_a_leaf_gets_its_capacity_from_the_root_and_shares_it_with_decayed_refresh() -> None:
    root = master(repo(template("*", 100, lease_length=60, refresh_interval=16, learning_mode_duration=0)))
    leaf = ServerCore("leaf")
    leaf.on_election(True, "leaf:1", 0.0)
    # Learning (20 s after the victory): echo, and ask the parent nothing yet.
    assert ask(leaf, "a", "r", 30, 1.0, has=12).gets.capacity == 12
    assert leaf.upstream_request(1.0) == pb.GetServerCapacityRequest(server_id="leaf")
    # Learning over; before the root answers, the leaf has nothing to give.
    assert ask(leaf, "a", "r", 30, 21.0).gets.capacity == 0
    ask(leaf, "b", "r", 50, 21.0)
    up = leaf.upstream_request(21.0)
    assert up is not None
    assert [(b.priority, b.num_clients, b.wants) for b in up.resource[0].wants] == [(1, 2, 80)]
    down = root.get_server_capacity(up, 21.0)
    assert down.response[0].gets.capacity == 80 and down.response[0].algorithm.kind == FAIR
    assert leaf.apply_upstream(down, 21.0) == 16
    leaf_resource = leaf.resources["r"]
    assert leaf_resource.template.algorithm.refresh_interval == 8  # 16 * decay 0.5
    assert ask(leaf, "a", "r", 30, 30.0).gets.capacity == 30
    lease = ask(leaf, "b", "r", 50, 30.0).gets
    assert lease.capacity == 50 and lease.refresh_interval == 8
    assert lease.expiry_time <= down.response[0].gets.expiry_time  # never beyond the leaf's own lease
    # The leaf tells the root what it holds when it asks again.
    again = leaf.upstream_request(40.0)
    assert again is not None and again.resource[0].has.capacity == 80


def test_a_leaf_whose_own_lease_lapsed_has_no_capacity() -> None:
    leaf = ServerCore("leaf")
    leaf.on_election(True, "leaf:1", 0.0)
    ask(leaf, "a", "r", 30, 1.0)
    down = pb.GetServerCapacityResponse()
    r = down.response.add(resource_id="r")
    r.gets.CopyFrom(pb.Lease(expiry_time=10, refresh_interval=4, capacity=30))
    r.algorithm.CopyFrom(
        template("*", 0, lease_length=60, refresh_interval=4, learning_mode_duration=0).algorithm
    )
    leaf.apply_upstream(down, 2.0)
    assert leaf.resources["r"].capacity(5.0) == 30
    assert leaf.resources["r"].capacity(10.0) == 0


def test_upstream_failures_back_off_exponentially_up_to_a_minute() -> None:
    leaf = ServerCore("leaf")
    waits = [leaf.upstream_failed() for _ in range(9)]
    assert waits[:4] == [1, 2, 4, 8] and waits[-1] == 60


# --- a capacity that follows demand (on-demand tables) --------------------------------


def following(capacity: float, memory: float = 1800, multiplier: float = 2.0) -> pb.ResourceTemplate:
    out = template("*", capacity, lease_length=30, refresh_interval=5, learning_mode_duration=0)
    out.algorithm.parameters.add(name="peak_memory_seconds", value=f"{memory:g}")
    out.algorithm.parameters.add(name="peak_multiplier", value=f"{multiplier:g}")
    return out


def test_a_following_capacity_is_the_template_until_twice_the_peak_of_wants_exceeds_it() -> None:
    core = master(repo(following(100)))
    assert ask(core, "a", "r", 30, 1.0).gets.capacity == 30
    assert core.resources["r"].capacity(1.0) == 100  # peak 30: 2 x 30 < 100
    ask(core, "b", "r", 50, 2.0)
    assert core.resources["r"].capacity(2.0) == 160  # summed wants 80, twice that
    # Wants above the capacity: the capacity grows with them, one request behind.
    assert ask(core, "a", "r", 300, 7.0).gets.capacity == pytest.approx(300)
    assert core.resources["r"].capacity(7.0) == 700  # 2 x (300 + 50)
    assert sum(lease.has for _, lease in core.resources["r"].store.items()) <= 700


def test_a_following_capacity_stops_at_its_ceiling() -> None:
    # An on-demand table's OnDemandThroughput: its peaks do not lift it past its maximum.
    capped = following(100)
    capped.algorithm.parameters.add(name="capacity_ceiling", value="250")
    core = master(repo(capped))
    ask(core, "a", "r", 400, 1.0)
    assert core.resources["r"].capacity(2.0) == 250  # 2 x 400 = 800, held at 250
    bad = following(100)
    bad.algorithm.parameters.add(name="capacity_ceiling", value="0")
    with pytest.raises(ConfigError, match="capacity_ceiling"):
        repo(bad)


def test_a_following_capacity_remembers_its_peak_for_the_configured_time_then_falls_back() -> None:
    core = master(repo(following(100, memory=60)))
    ask(core, "a", "r", 400, 1.0)
    ask(core, "a", "r", 10, 7.0)  # demand dropped
    assert core.resources["r"].capacity(30.0) == 800  # the previous peak still counts
    assert core.resources["r"].capacity(62.0) == 100  # forgotten after 60 s: 2 x 10 < 100
    ask(core, "a", "r", 10, 70.0)
    assert core.resources["r"].capacity(70.0) == 100


def test_the_peak_survives_a_reload_and_a_following_parameter_is_validated() -> None:
    core = master(repo(following(100)))
    ask(core, "a", "r", 400, 1.0)
    core.load_repository(repo(following(120)))
    assert core.resources["r"].capacity(2.0) == 800
    core.load_repository(repo(template("*", 120, learning_mode_duration=0)))  # no longer following
    assert core.resources["r"].capacity(3.0) == 120
    bad = following(100)
    bad.algorithm.parameters[0].value = "soon"
    with pytest.raises(ConfigError, match="peak_memory_seconds"):
        repo(bad)


def test_a_leaf_below_a_following_root_uses_its_parents_lease_not_its_own_peak() -> None:
    root = master(repo(following(100)))
    leaf = ServerCore("leaf")
    leaf.on_election(True, "leaf:1", -100.0)
    ask(leaf, "a", "r", 150, 1.0)
    up = leaf.upstream_request(1.0)
    assert up is not None
    down = root.get_server_capacity(up, 1.0)
    assert down.response[0].gets.capacity == 150  # the root grew to 300 for it
    leaf.apply_upstream(down, 1.0)
    assert leaf.resources["r"].capacity(2.0) == 150  # the pushed parameters do not apply here
