"""Timing of the consensus core. Every duration is in seconds of the replica's own
(injected, monotonic) clock; the defaults suit replicas on a LAN or in one region.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ReplicationConfig:
    # How often a leader sends a heartbeat round (renewing its lease) while active.
    heartbeat_interval: float = 0.2
    # A follower that has heard nothing from its leader for a random time in
    # [election_timeout, 2 * election_timeout) starts a pre-vote.
    election_timeout: float = 1.0
    # A follower promises not to help elect another leader for this long after it last
    # heard the leader; the leader's lease is the same promise seen from its side,
    # shortened for clock drift (see lease_duration_at_leader). At most election_timeout,
    # so a follower's own promise has run out when its election timer fires; shorter by
    # a margin, so peers that heard the same last heartbeat a little later have let go
    # too when the first pre-vote arrives (otherwise failover waits another timeout).
    lease_duration: float = 0.8
    # Bound on the relative rate error of any replica's clock (0.01 = 1%). Clocks are
    # only compared as durations, never as absolute times.
    max_clock_drift: float = 0.01
    # A leader with nothing in flight for this long quiesces its group: no heartbeats,
    # no ticks, until the next proposal, read or message (node liveness stands in).
    quiesce_after: float = 2.0
    # A leader no client has used in its term quiesces as soon as its first entry is
    # committed and held by every follower, without waiting quiesce_after (a restart
    # elects thousands of groups at once; awake, they overload the node).
    quiesce_when_elected: bool = True
    # A node whose event loop runs its ticks later than this is overloaded: its leaders
    # do not step down for want of a quorum (the answers are likely waiting in its own
    # socket buffers), and every election timeout is stretched by the lateness anyway.
    loop_lag_tolerance: float = 0.1
    # Most entries in one APPEND message.
    max_append_entries: int = 64
    # Simulation only: the leader takes its lease as the full lease_duration, as if
    # clocks never drifted. Exists so a test can show the checker catches the result.
    unsafe_ignore_clock_drift: bool = False
    # Simulation only: voters help elect a new leader while they still promised the old
    # one, so a new leader serves while the old lease holds.
    unsafe_ignore_lease_promise: bool = False

    def __post_init__(self) -> None:
        if not 0 <= self.max_clock_drift < 1:
            raise ValueError("max_clock_drift must be in [0, 1)")
        if self.lease_duration > self.election_timeout:
            raise ValueError("lease_duration may not exceed election_timeout")
        if self.heartbeat_interval >= self.lease_duration:
            raise ValueError("heartbeat_interval must be shorter than lease_duration")

    @property
    def lease_duration_at_leader(self) -> float:
        """The lease as the leader measures it: a promise of `lease_duration` on the
        fastest follower clock can be as short as lease_duration / (1 + drift) of true
        time, and the leader's slowest clock stretches its own duration by 1 / (1 - drift).
        """
        if self.unsafe_ignore_clock_drift:
            return self.lease_duration
        rho = self.max_clock_drift
        return self.lease_duration * (1 - rho) / (1 + rho)
