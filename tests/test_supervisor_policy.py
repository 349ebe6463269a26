"""Restart policy: backoff after work, throttle before work, fatal on flapping, slow fatal retry."""

from __future__ import annotations

from donebell.supervisor.policy import Intervals, RestartPolicy

IV = Intervals(
    backoff_base=1, backoff_cap=8, throttle=10, stable_after=60, flap_window=300, flap_count=5, fatal_retry=300
)


def test_exits_after_work_back_off_exponentially_up_to_the_cap() -> None:
    """Deaths after doing work restart after 1, 2, 4, 8, 8 s (capped) while they are spaced out."""
    policy = RestartPolicy(Intervals(**{**IV.as_dict(), "flap_count": 100}))  # type: ignore[arg-type]
    delays = [policy.on_exit(at=100.0 * i, uptime=5, did_work=True).delay for i in range(5)]
    assert delays == [1, 2, 4, 8, 8]


def test_a_stable_run_resets_the_backoff() -> None:
    """A run that lasted stable_after seconds starts the backoff over at its base."""
    policy = RestartPolicy(IV)
    policy.on_exit(0, uptime=5, did_work=True)
    policy.on_exit(10, uptime=5, did_work=True)
    decision = policy.on_exit(500, uptime=120, did_work=True)
    assert (decision.delay, decision.state) == (1, "backoff")


def test_exit_before_the_first_pass_is_throttled() -> None:
    """A role that dies before any unit of work waits the throttle interval, not the backoff."""
    decision = RestartPolicy(IV).on_exit(0, uptime=0.1, did_work=False)
    assert (decision.delay, decision.state, decision.fatal) == (10, "throttled", False)


def test_repeated_fast_failures_within_the_window_turn_fatal() -> None:
    """The flap_count-th fast failure within flap_window makes the role fatal, retried every fatal_retry."""
    policy = RestartPolicy(IV)
    states = [policy.on_exit(at=11.0 * i, uptime=0.2, did_work=False).state for i in range(5)]
    assert states == ["throttled"] * 4 + ["fatal"]
    again = policy.on_exit(at=400, uptime=0.2, did_work=False)
    assert (again.state, again.delay, again.fatal) == ("fatal", 300, True)


def test_failures_spread_beyond_the_window_never_turn_fatal() -> None:
    """Fast failures further apart than the window are forgotten: no fatal from old history."""
    policy = RestartPolicy(IV)
    decisions = [policy.on_exit(at=100.0 * i, uptime=1, did_work=False) for i in range(20)]
    assert not any(d.fatal for d in decisions)


def test_a_fatal_role_that_works_again_leaves_fatal() -> None:
    """on_working() after a fatal retry clears fatal and the flap history."""
    policy = RestartPolicy(IV)
    for i in range(5):
        policy.on_exit(at=float(i), uptime=0.1, did_work=False)
    assert policy.fatal and policy.on_working() and not policy.fatal
    assert policy.on_exit(at=1000, uptime=2, did_work=True).state == "backoff"
    assert not policy.on_working()


def test_intervals_come_from_the_environment_and_bad_values_are_ignored() -> None:
    """DONEBELL_SUPERVISOR_<NAME> overrides a default; junk or negative values keep it."""
    iv = Intervals.from_env(
        {
            "DONEBELL_SUPERVISOR_FATAL_RETRY": "2.5",
            "DONEBELL_SUPERVISOR_FLAP_COUNT": "3",
            "DONEBELL_SUPERVISOR_THROTTLE": "soon",
            "DONEBELL_SUPERVISOR_BACKOFF_CAP": "-1",
        }
    )
    assert (iv.fatal_retry, iv.flap_count, iv.throttle, iv.backoff_cap) == (2.5, 3, 10.0, 60.0)


def test_a_role_killed_while_working_is_not_flapping_but_one_killed_before_work_is() -> None:
    """Issue 26 item 14: twenty SIGKILLs of a working role in a minute restart it after the base
    delay each time (they made it fatal for 300 s at the fifth); kills before its first pass
    still count as fast failures and throttle it."""
    policy = RestartPolicy(IV)
    decisions = [policy.on_exit(at=3.0 * i, uptime=2.5, did_work=True, killed=True) for i in range(20)]
    assert {(d.delay, d.state, d.fatal) for d in decisions} == {(1, "backoff", False)}
    before_work = [policy.on_exit(at=60.0 + i, uptime=0.2, did_work=False, killed=True) for i in range(5)]
    assert [d.state for d in before_work] == ["throttled"] * 4 + ["fatal"]
    crashed = RestartPolicy(IV)  # an exit of its own after work (a crash, not a kill) still backs off
    assert [crashed.on_exit(at=i, uptime=2, did_work=True).delay for i in range(3)] == [1, 2, 4]
