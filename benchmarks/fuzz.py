"""Long fuzz campaigns (issue #19): ``python benchmarks/fuzz.py --minutes N``.

Runs the campaigns of ``tests/fuzz/campaigns.py`` (parser text mutants, params byte mutants,
ONNX byte/semantic mutants imported in worker subprocesses) and, with ``--target cli``, the
command-line campaign of ``tests/fuzz/cli_campaign.py`` (random ``irlib`` argument lists, one
batch of 250 per worker process, every 25th also as its own process) round-robin until the
time is up,
with a new seed per round, and prints the counts. Every failure (an exception that is not an
``irlib.errors.IRError`` with a message, a hang or a crash) is printed and saved under
``--out`` so it can become a regression test. Exit status 1 when any failure was found.

Args (command line):
    --minutes: total time budget (default 5).
    --campaigns (or --target): comma-separated subset of parser,params,onnx,cli (default
        parser,params,onnx; cli is slower, about 0.2 s an invocation).
    --seed: first seed (default 0).
    --out: folder for failing inputs (default fuzz-failures).
"""

from __future__ import annotations

import argparse
import functools
import os
import pickle
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "fuzz"))

import campaigns  # noqa: E402

import cli_campaign  # noqa: E402

ROUNDS = {"parser": (campaigns.parser_campaign, 5000), "params": (campaigns.params_campaign, 5000),
          "onnx": (campaigns.onnx_campaign, 400), "cli": (functools.partial(cli_campaign.cli_campaign, real_every=25), 250)}
DEFAULT = "parser,params,onnx"


def main(argv=None) -> int:
    """Run the campaigns for ``--minutes`` and report; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--campaigns", "--target", dest="campaigns", default=DEFAULT,
                        help=f"comma-separated subset of {','.join(ROUNDS)} (default {DEFAULT})")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="fuzz-failures")
    args = parser.parse_args(argv)
    names = [n for n in args.campaigns.split(",") if n]
    unknown = [n for n in names if n not in ROUNDS]
    if unknown:
        parser.error(f"unknown campaign(s): {', '.join(unknown)}")
    totals = {n: campaigns.Report(n) for n in names}
    deadline = time.monotonic() + args.minutes * 60
    seed = args.seed
    while time.monotonic() < deadline:
        for name in names:
            if time.monotonic() >= deadline:
                break
            run, count = ROUNDS[name]
            report = run(count, seed=seed)
            total = totals[name]
            total.cases += report.cases
            total.ok += report.ok
            total.irlib_errors += report.irlib_errors
            total.seconds += report.seconds
            total.failures += report.failures
            for case, description in report.failures:
                print(f"[{name} seed {seed}] {description}", flush=True)
        seed += 1
    failures = 0
    for report in totals.values():
        print(report.summary())
        failures += len(report.failures)
        if report.failures:
            os.makedirs(args.out, exist_ok=True)
            with open(os.path.join(args.out, f"{report.name}.pkl"), "wb") as handle:
                pickle.dump(report.failures, handle)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
