#!/usr/bin/env python3
"""CPU test of launch_cost.py and tracing_cost.traced_command (ctest: launch_cost_py):
stand-ins for timeroof (runs the command after "--") and for examples/launch_cost
(prints a per-launch time that depends on the diagnostics the choice set), so the
suffix-to-environment mapping and the medians and differences printed are checked
against known numbers. Standard library only."""
import os
import re
import stat
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from tracing_cost import traced_command  # noqa: E402

# Untraced 3.0 us a launch; traced 4.0; +0.5 with the names (TIMEROOF_PROFILE_NAMES
# unset), +0.25 with sync records; the NVTX phase +0.125 over launch. Each run adds
# 0-2 thousandths (its run number mod 3) so runs differ.
PROGRAM = r'''#!/usr/bin/env python3
import os, sys
traced = os.environ.get("FAKE_TRACED") == "1"
base = 3.0
if traced:
    base = 4.0
    if os.environ.get("TIMEROOF_PROFILE_NAMES") != "0":
        base += 0.5
    if os.environ.get("TIMEROOF_PROFILE_SYNC") != "0":
        base += 0.25
counter = os.environ["FAKE_COUNTER"]
with open(counter, "a") as f:
    f.write("x")
run = len(open(counter).read())
base += (run % 3) / 1000.0
print("some other output")
print(f"launch_cost launch: {base:.3f} us per launch (p10 0, p90 0, 1 batches of 1)")
print(f"launch_cost launch_nvtx: {base + 0.125:.3f} us per launch (p10 0, p90 0, 1 batches of 1)")
'''
TIMEROOF = r'''#!/bin/sh
while [ "$1" != "--" ]; do shift; done
shift
FAKE_TRACED=1 exec "$@"
'''


def write_script(path, text):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)


class TracedCommand(unittest.TestCase):
    def test_suffixes_set_the_diagnostics(self):
        cases = {
            "untraced": (None, {}),
            "none": ("none", {}),
            "launches-nosync": ("launches", {"TIMEROOF_PROFILE_SYNC": "0"}),
            "none-nonames": ("none", {"TIMEROOF_PROFILE_NAMES": "0"}),
            "launches-runtime-nosync": ("launches", {"TIMEROOF_PROFILE_SYNC": "0",
                                                     "TIMEROOF_PROFILE_API_DOMAIN": "runtime"}),
            "all-nonames-nosync": ("all", {"TIMEROOF_PROFILE_SYNC": "0",
                                           "TIMEROOF_PROFILE_NAMES": "0"}),
        }
        for choice, (api, variables) in cases.items():
            command, env = traced_command("timeroof", choice, "x.db", ["prog", "--flag"])
            self.assertEqual(command[-2:], ["prog", "--flag"], choice)
            if api is None:
                self.assertEqual(command, ["prog", "--flag"])
            else:
                self.assertEqual(command[:2], ["timeroof", "profile"])
                self.assertEqual(command[command.index("--api") + 1], api, choice)
            for name in ("TIMEROOF_PROFILE_SYNC", "TIMEROOF_PROFILE_NAMES",
                         "TIMEROOF_PROFILE_API_DOMAIN"):
                self.assertEqual(env.get(name), variables.get(name), f"{choice}: {name}")


class LaunchCost(unittest.TestCase):
    def test_medians_and_added_time(self):
        with tempfile.TemporaryDirectory() as work:
            program, timeroof = os.path.join(work, "program"), os.path.join(work, "timeroof")
            write_script(program, PROGRAM)
            write_script(timeroof, TIMEROOF)
            env = dict(os.environ, FAKE_COUNTER=os.path.join(work, "counter"))
            for name in ("TIMEROOF_PROFILE_SYNC", "TIMEROOF_PROFILE_NAMES"):
                env.pop(name, None)
            out = subprocess.run(
                [sys.executable, os.path.join(HERE, "launch_cost.py"), "--timeroof", timeroof,
                 "--program", program, "--choices", "none,none-nonames,launches-nosync",
                 "--rounds", "3"], capture_output=True, text=True, check=True, env=env).stdout
        rows = {}
        phase = None
        for line in out.splitlines():
            if m := re.match(r"(\w+): untraced ([\d.]+) us", line):
                phase = m.group(1)
                rows[(phase, "untraced")] = float(m.group(2))
            elif m := re.match(r"\s+--api (\S+)\s+([\d.]+) us .*?([+-][\d.]+) us", line):
                rows[(phase, m.group(1))] = (float(m.group(2)), float(m.group(3)))
        # Each run adds 0-2 thousandths: medians hold to within 0.003 us.
        self.assertAlmostEqual(rows[("launch", "untraced")], 3.0, delta=0.003)
        self.assertAlmostEqual(rows[("launch_nvtx", "untraced")], 3.125, delta=0.003)
        for choice, added in {"none": 1.75, "none-nonames": 1.25, "launches-nosync": 1.5}.items():
            traced, plus = rows[("launch", choice)]
            self.assertAlmostEqual(plus, added, delta=0.003, msg=choice)
            self.assertAlmostEqual(traced, 3.0 + added, delta=0.003, msg=choice)
            self.assertAlmostEqual(rows[("launch_nvtx", choice)][1], added, delta=0.003,
                                   msg=choice)


if __name__ == "__main__":
    unittest.main()
