#!/usr/bin/env python3
"""Data out (issue 20): every export loads with Python's csv and json modules, numbers
parse as numbers and integer columns are integral, and the export and analysis JSON
documents match their committed schemas (docs/schemas/*.json).

usage: data_out_test.py TIMEROOF SOURCE_DIR

The bundled sample shown without a GPU (samples/sample-full-run-h200.json.gz: every
operator family's default sweep and the resnet50 model table, two runs) is imported into
a temporary store and every document is read from what the binary writes. The schemas
are checked by the small validator below (standard library only: type, required,
properties, additionalProperties, items, enum, const, anyOf, $ref to $defs); where the
jsonschema package is installed the documents are also checked by it.
"""
import csv
import gzip
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import unittest

TOOL = None
SOURCE = None

INTEGER = re.compile(r"^-?[0-9]+$")


def run(*args, expect=0):
    result = subprocess.run([TOOL, *args], capture_output=True, text=True, timeout=300)
    if result.returncode != expect:
        raise AssertionError(
            f"timeroof {' '.join(args)}: exit {result.returncode}, expected {expect}\n"
            f"stderr: {result.stderr[-2000:]}")
    return result


# ---- a JSON Schema validator for the keywords the committed schemas use --------------

def json_type(value):
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def type_matches(value, wanted):
    actual = json_type(value)
    if wanted == "number":
        return actual in ("number", "integer")
    return actual == wanted


SUPPORTED = {"$schema", "$id", "$defs", "$ref", "title", "description", "type", "required",
             "properties", "additionalProperties", "items", "enum", "const", "anyOf"}


def validate(value, schema, root, path="$"):
    """The list of errors of `value` against `schema` (empty: valid)."""
    unknown = set(schema) - SUPPORTED
    if unknown:  # a keyword this validator would silently ignore
        return [f"{path}: schema keyword(s) {sorted(unknown)} not supported by the test"]
    if "$ref" in schema:
        ref = schema["$ref"]
        assert ref.startswith("#/$defs/"), ref
        return validate(value, root["$defs"][ref[len("#/$defs/"):]], root, path)
    if "anyOf" in schema:
        branches = [validate(value, branch, root, path) for branch in schema["anyOf"]]
        if all(branches):
            return [f"{path}: matches no branch of anyOf; closest: "] + min(branches, key=len)
    errors = []
    if "type" in schema:
        wanted = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(type_matches(value, t) for t in wanted):
            return [f"{path}: {json_type(value)} {str(value)[:60]!r}, schema wants {wanted}"]
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{path}: {value!r} not one of {schema['enum']}")
    if "const" in schema and value != schema["const"]:
        errors.append(f"{path}: {value!r} is not {schema['const']!r}")
    if isinstance(value, dict):
        for key in schema.get("required", []):
            if key not in value:
                errors.append(f"{path}: required key '{key}' missing")
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            if key in properties:
                errors += validate(item, properties[key], root, f"{path}.{key}")
            elif extra is False:
                errors.append(f"{path}: key '{key}' not in the schema")
            elif isinstance(extra, dict):
                errors += validate(item, extra, root, f"{path}.{key}")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            errors += validate(item, schema["items"], root, f"{path}[{i}]")
            if len(errors) > 20:
                break
    return errors


def load_schema(name):
    with open(os.path.join(SOURCE, "docs", "schemas", name), encoding="utf-8") as f:
        return json.load(f)


def schema_errors(document, schema):
    errors = validate(document, schema, schema)
    try:
        import jsonschema  # optional: the same documents through a full validator
    except ImportError:
        return errors
    validator = jsonschema.Draft202012Validator(schema)
    return errors + [f"jsonschema: {e.json_path}: {e.message[:200]}"
                     for e in list(validator.iter_errors(document))[:20]]


def read_csv(path):
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[1:]
    for i, row in enumerate(body):
        if len(row) != len(header):
            raise AssertionError(f"{path}: row {i + 1} has {len(row)} cells, header {len(header)}")
    return header, body


def is_number(cell):
    try:
        return math.isfinite(float(cell))
    except ValueError:
        return False


# Columns whose name gives a unit or a count: numbers wherever they are not empty.
NUMERIC = re.compile(r"(_s|_bytes|_flop|_flop_per_s|_bytes_per_s|_flop_per_byte|_hz|_w|_c|"
                     r"_spread|_samples|_calls_per_sample|^seq|^run_id|_index|^grid_.|"
                     r"^block_.|^repeats|^spread|^measured|^theoretical|^value|^efficiency|"
                     r"^headroom|^kernel_headroom|^tensor_share|^tensor_utilisation|^launches|"
                     r"^counters|^sustained_measured)$")
# Columns that hold counts: integers, never 7.0.
INTEGRAL = re.compile(r"(^seq|^run_id|_index|^grid_.|^block_.|^repeats|_samples|"
                      r"_calls_per_sample|^launches|^counters)$")


def without_time_twins(metrics):
    """A kernel's metrics without the twins the export adds to the time counters
    ("duration_s" beside "duration"; "_ns" and "_s" beside gpu__time_duration.*), which
    import drops."""
    def twin(key):
        if key == "duration_s":
            return "duration" in metrics
        base = re.sub(r"_n?s$", "", key)
        return base != key and base.startswith("gpu__time_duration") and base in metrics
    return {k: v for k, v in metrics.items() if not twin(k)}


class DataOut(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = cls.tmp.name
        cls.db = os.path.join(cls.dir, "s.db")
        cls.sample_path = os.path.join(SOURCE, "samples", "sample-full-run-h200.json.gz")
        with gzip.open(cls.sample_path, "rt", encoding="utf-8") as f:
            cls.sample = json.load(f)
        cls.imported = json.loads(run("import", cls.sample_path, "--db", cls.db, "--json").stdout)
        cls.csv_dir = os.path.join(cls.dir, "csv")
        cls.csv_paths = run("export", "--db", cls.db, "--format", "csv", "--out",
                            cls.csv_dir).stdout.split()

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_import_json_names_the_stored_ids(self):
        runs = self.imported["runs"]
        self.assertEqual(len(runs), len(self.sample["runs"]))
        self.assertIsInstance(runs[0]["id"], int)
        self.assertEqual(runs[0]["uuid"], self.sample["runs"][0]["uuid"])
        self.assertEqual(runs[0]["points"], len(self.sample["runs"][0]["points"]))
        self.assertEqual(self.imported["db"], self.db)

    def test_export_document_matches_its_schema(self):
        document = json.loads(run("export", "--db", self.db).stdout)
        schema = load_schema("export.schema.json")
        self.assertEqual(schema_errors(document, schema), [])
        # The schema is not vacuous: a field of another type or a missing one is caught.
        point = document["runs"][0]["points"][0]
        point["seq"] = float(point["seq"])
        self.assertTrue(schema_errors(document, schema))
        point["seq"] = int(point["seq"])
        del point["timing"]
        self.assertTrue(schema_errors(document, schema))

    def test_export_schema_holds_where_a_point_spent_its_time(self):
        # #21: the timing window's phases, the worker's round trip and the graph
        # pilots (written by sweeps/runner_timing.cpp), as an H100 stored them for
        # the fp32 8192^3 GEMM before the pilot limit.
        exported = run("export", "--db", self.db).stdout
        schema = load_schema("export.schema.json")

        def with_phases(spoil=None):
            document = json.loads(exported)
            details = document["runs"][0]["points"][0]["details"]
            timing = details["timing"]
            timing["phase_seconds"] = {
                "host_probes": 0.006, "warm_up": 0.063, "warm_up_first_call": 0.021,
                "graph_setup": 16.049, "call": 0.666, "stream": 0.395, "graph": 3.165,
                "passes_other": 0.004, "build": 0.0, "prepare": 0.022, "host_buffers": 0.0,
                "teardown": 0.001, "total": 20.370}
            timing["worker_wall_s"] = 20.371
            timing["warm_up_calls"] = 3
            timing["graph"]["pilots"] = [
                {"copies": 1, "per_call_s": 0.023948, "seconds": 0.24},
                {"copies": 8, "per_call_s": 0.021875, "seconds": 1.75},
                {"copies": 64, "per_call_s": 0.021980, "seconds": 14.06}]
            if spoil:
                spoil(details)
            return document

        self.assertEqual(schema_errors(with_phases(), schema), [])
        spoilers = [
            lambda d: d["timing"]["phase_seconds"].update(graph_setup="16 s"),
            lambda d: d["timing"].update(worker_wall_s=None),
            lambda d: d["timing"]["graph"]["pilots"][2].pop("seconds"),
            lambda d: d.update(runner_seconds={"timing": "slow"}),
        ]
        for spoil in spoilers:
            self.assertTrue(schema_errors(with_phases(spoil), schema))

    def profile_store(self):
        """A store with a profile run whose trace has kernel counters
        (tests/fixtures/profile-counters.jsonl) and a ceilings run of its GPU: the
        ids of (ceilings, profile)."""
        with open(os.path.join(SOURCE, "tests", "fixtures", "profile-transformer-h100.json"),
                  encoding="utf-8") as f:
            document = json.load(f)
        profile = document["runs"][0]
        profile["uuid"] = "7a0f17aa-0000-4000-8000-000000000017"
        with open(os.path.join(SOURCE, "tests", "fixtures", "profile-counters.jsonl"),
                  encoding="utf-8") as f:
            profile["trace"] = [json.loads(line) for line in f if line.strip()]
        with open(os.path.join(SOURCE, "tests", "fixtures", "ceilings-h200-run1.json"),
                  encoding="utf-8") as f:
            ceilings = json.load(f)["runs"][0]
        ceilings["uuid"] = "7a0f17aa-0000-4000-8000-0000000000ce"
        ceilings["machine"]["gpu"]["name"] = profile["machine"]["gpu"]["name"]
        document["runs"] = [ceilings, profile]
        path = os.path.join(self.dir, "profile-export.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(document, f)
        db = os.path.join(self.dir, "profile.db")
        if os.path.exists(db):
            os.remove(db)
        imported = json.loads(run("import", path, "--db", db, "--json").stdout)["runs"]
        return db, str(imported[0]["id"]), str(imported[1]["id"])

    def test_profile_analysis_json_matches_its_schema(self):
        db, ceilings_id, profile_id = self.profile_store()
        document = json.loads(run("analyze", profile_id, "--db", db, "--format", "json").stdout)
        schema = load_schema("profile-analysis.schema.json")
        self.assertEqual(schema_errors(document, schema), [])
        self.assertEqual(document["format"], "timeroof-profile-analysis")
        profile = document["runs"][0]
        self.assertTrue(profile["roofs_from"].startswith("run " + ceilings_id + " "))
        self.assertEqual(profile["counters"], {"records": 3, "unmatched": 1})
        gemm = next(k for k in profile["kernels"] if k["name"] == "gemm_kernel")
        self.assertEqual(gemm["model"]["launches_covered"], 3)
        self.assertEqual(gemm["model"]["launches_not_covered"], 3)
        self.assertAlmostEqual(gemm["model"]["t_k_s"], 120e-6, delta=1e-12)
        self.assertAlmostEqual(gemm["model"]["tensor_fp16_flop"], 48e9, delta=1)
        layer0 = profile["threads"][0]["ranges"][0]["children"][0]["children"][0]
        self.assertEqual(layer0["path"], "step/forward/layer0")
        self.assertGreater(layer0["model"]["lower_bound_s"], 0)
        # The schema is not vacuous.
        gemm["model"]["t_k_s"] = "120 us"
        self.assertTrue(schema_errors(document, schema))
        del gemm["model"]["t_k_s"]
        self.assertTrue(schema_errors(document, schema))
        # Beside other runs: the analysis document, the profiles under "profiles".
        both = json.loads(run("analyze", "--db", db, "--format", "json").stdout)
        self.assertEqual(schema_errors(both, load_schema("analysis.schema.json")), [])
        self.assertEqual(len(both["runs"]), 1)
        self.assertEqual(schema_errors(both["profiles"], schema), [])

    def test_profile_analysis_csv_is_tidy(self):
        db, ceilings_id, profile_id = self.profile_store()
        path = os.path.join(self.dir, "profile.csv")
        run("analyze", profile_id, "--db", db, "--format", "csv", "--out", path)
        header, body = read_csv(path)
        self.assertEqual(header[-6:], ["subject", "process_id", "thread_id", "class", "quantity",
                                       "value"])
        value = header.index("value")
        for row in body:
            self.assertTrue(row[value] == "" or is_number(row[value]), row)
        rows = {(r[header.index("kind")], r[header.index("subject")], r[header.index("quantity")]):
                r for r in body}
        layer1 = rows[("range", "step/forward/layer1", "launches_not_covered")]
        self.assertEqual(layer1[value], "3")
        self.assertEqual(layer1[header.index("class")], "memory_bound(dram)")
        self.assertIn(("program", "", "headroom"), rows)
        # One table per call: profiles and sweep runs together are refused, naming both.
        refused = run("analyze", "--db", db, "--format", "csv", expect=1)
        self.assertIn("profiles", refused.stderr)

    def test_analysis_document_matches_its_schema(self):
        document = json.loads(run("analyze", "--db", self.db, "--json").stdout)
        schema = load_schema("analysis.schema.json")
        self.assertEqual(schema_errors(document, schema), [])
        point = next(p for p in document["runs"][0]["points"] if p["analysed"])
        point["t_roof_s"] = str(point["t_roof_s"])
        self.assertTrue(schema_errors(document, schema))
        del point["t_roof_s"]
        self.assertTrue(schema_errors(document, schema))

    def test_csv_tables_are_written_and_named(self):
        names = sorted(os.path.basename(p) for p in self.csv_paths)
        # model_layers.csv: the model run's layers (the sample holds one).
        self.assertEqual(names, ["ceilings.csv", "kernel_counters.csv", "kernels.csv",
                                 "model_layers.csv", "points.csv"])
        for path in self.csv_paths:
            self.assertTrue(os.path.isfile(path), path)

    def test_csv_numbers_parse_and_counts_are_integers(self):
        for path in self.csv_paths:
            header, body = read_csv(path)
            self.assertTrue(body, f"{path}: no rows")
            for c, name in enumerate(header):
                cells = [row[c] for row in body if row[c] != ""]
                if NUMERIC.search(name):
                    bad = [x for x in cells if not is_number(x)]
                    self.assertEqual(bad[:3], [], f"{path}: {name} holds non-numbers")
                if INTEGRAL.search(name):
                    bad = [x for x in cells if not INTEGER.match(x)]
                    self.assertEqual(bad[:3], [], f"{path}: {name} holds non-integers")
                # No number is written as an integer with a fraction ("16.0").
                self.assertFalse([x for x in cells if re.fullmatch(r"-?[0-9]+\.0+", x)],
                                 f"{path}: {name}")
                self.assertFalse([x for x in cells if "&amp;" in x or "&lt;" in x],
                                 f"{path}: {name} is HTML-escaped")

    def test_points_csv_agrees_with_the_export_and_analysis(self):
        header, body = read_csv(os.path.join(self.csv_dir, "points.csv"))
        # Every run's points, run after run, each with its run's GPU.
        points = [(r, p) for r in self.sample["runs"] for p in r["points"]]
        self.assertEqual(len(body), len(points))
        rows = [dict(zip(header, row)) for row in body]
        analysis = json.loads(run("analyze", "--db", self.db, "--json").stdout)["runs"]
        models = [m for r in analysis for m in r["points"]]
        self.assertEqual(len(models), len(points))
        for row, (run_, point), model in zip(rows, points, models):
            self.assertEqual(row["run_uuid"], run_["uuid"])
            self.assertEqual(row["sweep"], point["sweep"])
            self.assertEqual(int(row["seq"]), point["seq"])
            self.assertEqual(row["gpu_name"], run_["machine"]["gpu"]["name"])
            for key, value in point["params"].items():
                # integer parameters stay integers ("16"), text stays text
                self.assertEqual(row["param_" + key], str(value), key)
            self.assertEqual(float(row["analytic_flop"]), point["flops"])
            if not model["analysed"]:
                continue
            self.assertEqual(row["class"], model["class"]["label"])
            self.assertEqual(float(row["t_roof_s"]), model["t_roof_s"])
            for level in ("l1", "l2", "dram"):
                want = model["levels"][level]["bytes"]
                self.assertEqual(row[level + "_bytes"] == "", want is None, level)
                if want is not None:
                    self.assertEqual(float(row[level + "_bytes"]), want, level)
            if model["achieved"] is not None:
                self.assertAlmostEqual(float(row["achieved_flop_per_s"]) / model["achieved"], 1,
                                       places=12)
            if model["launches"] is not None:
                self.assertEqual(int(row["launches"]), model["launches"])

    def test_analyze_csv_is_the_points_table(self):
        with open(os.path.join(self.csv_dir, "points.csv"), encoding="utf-8") as f:
            exported = f.read()
        self.assertEqual(run("analyze", "--db", self.db, "--format", "csv").stdout, exported)

    def test_kernels_and_ceilings_agree_with_the_export(self):
        runs = self.sample["runs"]
        kernels = [k for r in runs for p in r["points"] for k in p["kernels"]]
        header, body = read_csv(os.path.join(self.csv_dir, "kernels.csv"))
        self.assertEqual(len(body), len(kernels))
        first = dict(zip(header, body[0]))
        self.assertEqual(first["kernel_name"], kernels[0]["name"])
        self.assertEqual(int(first["grid_x"]), kernels[0]["grid"][0])
        self.assertEqual(float(first["duration_s"]), kernels[0]["duration_s"])
        header, body = read_csv(os.path.join(self.csv_dir, "kernel_counters.csv"))
        # The export's unit-labelled time twins (core/json_io.cpp) are not stored.
        self.assertEqual(len(body), sum(len(without_time_twins(k["metrics"])) for k in kernels))
        header, body = read_csv(os.path.join(self.csv_dir, "ceilings.csv"))
        self.assertEqual(len(body), sum(len(r["machine"]["ceilings"]) for r in runs))
        rows = {(r[header.index("run_uuid")], r[header.index("name")]): dict(zip(header, r))
                for r in body}
        for run_ in runs:
            for c in run_["machine"]["ceilings"]:
                row = rows[(run_["uuid"], c["name"])]
                self.assertEqual(float(row["measured"]), c["measured"])
                self.assertEqual(int(row["repeats"]), c["repeats"])
                self.assertEqual(row["unit"], c["unit"])

    def test_csv_export_refuses_a_missing_or_file_out(self):
        missing = run("export", "--db", self.db, "--format", "csv", expect=1)
        self.assertIn("pass --out DIR", missing.stderr)
        self.assertEqual(missing.stderr.count("\n"), 1)
        a_file = os.path.join(self.dir, "file.txt")
        with open(a_file, "w", encoding="utf-8") as f:
            f.write("x")
        refused = run("export", "--db", self.db, "--format", "csv", "--out", a_file, expect=1)
        self.assertIn("is a file", refused.stderr)
        both = run("export", "--db", self.db, "--format", "csv", "--json", "--out", self.dir,
                   expect=1)
        self.assertIn("disagree", both.stderr)

    def test_dry_run_json(self):
        plan = json.loads(run("sweep", "conv2d", "--batch", "1,2,4", "--dry-run", "--json", "--db",
                              os.path.join(self.dir, "none.db")).stdout)
        self.assertEqual(plan["family"], "conv2d")
        self.assertEqual(plan["points_listed"], len(plan["points"]))
        self.assertEqual([p["seq"] for p in plan["points"]], list(range(len(plan["points"]))))
        self.assertEqual(sorted({p["params"]["batch"] for p in plan["points"]}), [1, 2, 4])
        for p in plan["points"]:
            for key in ("flops", "min_bytes", "call_s", "point_s"):
                self.assertIsInstance(p[key], (int, float), key)
        self.assertAlmostEqual(plan["estimated_s"], sum(p["point_s"] for p in plan["points"]))
        self.assertEqual(plan["roofs"], "default")
        # with the store's roofs
        with_roofs = json.loads(run("sweep", "conv2d", "--batch", "1", "--dry-run", "--json",
                                    "--db", self.db).stdout)
        self.assertEqual(with_roofs["roofs"], "measured")

    def test_report_json_lists_the_files_written(self):
        out = os.path.join(self.dir, "report")
        written = json.loads(run("report", "--db", self.db, "--out", out, "--json").stdout)
        self.assertEqual(written["index"], os.path.join(out, "index.html"))
        self.assertIn(written["index"], written["files"])
        self.assertIn(os.path.join(out, "report.md"), written["files"])
        self.assertTrue(any(f.endswith(".svg") for f in written["files"]))
        for path in written["files"]:
            self.assertTrue(os.path.isfile(path), path)
        self.assertEqual(len(written["files"]), len(os.listdir(out)))
        self.assertEqual(written["runs"][0]["uuid"], self.sample["runs"][0]["uuid"])


if __name__ == "__main__":
    TOOL, SOURCE = sys.argv[1], sys.argv[2]
    unittest.main(argv=sys.argv[:1], verbosity=2)
