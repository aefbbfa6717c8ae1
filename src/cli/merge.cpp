#include "src/cli/merge.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "core/error.hpp"
#include "core/vocabulary.hpp"
#include "src/cli/shard.hpp"

namespace timeroof::cli {

namespace {

using nlohmann::json;

std::string short_uuid(const std::string& uuid) {
  return uuid.substr(0, 8);
}

// "run 1a2b3c4d (shard 0/3) of a.db": enough to find it with `timeroof runs --db a.db`.
std::string name_of(const SourcedRun& input) {
  const std::optional<Shard> shard = shard_of(input.record.run.spec);
  return "run " + short_uuid(input.record.run.uuid) +
         (shard ? " (shard " + to_string(*shard) + ")" : std::string()) + " of " + input.source;
}

// Where two JSON values first differ, as a path ("sweeps[0].points[3].batch").
std::string first_difference(const json& a, const json& b, const std::string& path) {
  if (a.is_object() && b.is_object()) {
    std::set<std::string> keys;
    for (const auto& [key, value] : a.items()) keys.insert(key);
    for (const auto& [key, value] : b.items()) keys.insert(key);
    for (const std::string& key : keys) {
      const std::string at = path + "." + key;
      if (!a.contains(key) || !b.contains(key))
        return at + " (only in " + (a.contains(key) ? "the first" : "the second") + ")";
      if (a.at(key) != b.at(key)) return first_difference(a.at(key), b.at(key), at);
    }
  }
  if (a.is_array() && b.is_array()) {
    if (a.size() != b.size())
      return path + " (" + std::to_string(a.size()) + " vs " + std::to_string(b.size()) +
             " entries)";
    for (std::size_t i = 0; i < a.size(); ++i)
      if (a[i] != b[i]) return first_difference(a[i], b[i], path + "[" + std::to_string(i) + "]");
  }
  return path + " (" + a.dump() + " vs " + b.dump() + ")";
}

json spec_without_shard(const json& spec) {
  json copy = spec;
  copy.erase("shard");
  return copy;
}

std::set<std::string> sweep_names(const json& spec) {
  std::set<std::string> names;
  if (spec.contains("sweeps") && spec.at("sweeps").is_array())
    for (const json& sweep : spec.at("sweeps"))
      if (sweep.is_object()) names.insert(sweep.value("name", std::string()));
  return names;
}

// "1, 4, 9 and 12 more": a short list for one line.
std::string seq_list(const std::vector<int>& seqs) {
  std::string text;
  const std::size_t shown = std::min<std::size_t>(seqs.size(), 12);
  for (std::size_t i = 0; i < shown; ++i) text += (i ? ", " : "") + std::to_string(seqs[i]);
  if (seqs.size() > shown) text += " and " + std::to_string(seqs.size() - shown) + " more";
  return text;
}

struct Job {
  json spec;  // without "shard"
  std::vector<const SourcedRun*> shards;
};

// The one run a job's shards become; throws a usage error on a conflict.
RunRecord merge_job(const Job& job, const std::string& command_line,
                    std::vector<std::string>& notes) {
  std::vector<const SourcedRun*> shards = job.shards;
  std::sort(shards.begin(), shards.end(), [](const SourcedRun* a, const SourcedRun* b) {
    return shard_of(a->record.run.spec)->index < shard_of(b->record.run.spec)->index;
  });
  const SourcedRun& first = *shards.front();
  const Shard first_shard = *shard_of(first.record.run.spec);
  const std::string& command = first.record.run.command_line;
  for (std::size_t i = 1; i < shards.size(); ++i) {
    const SourcedRun& other = *shards[i];
    const Shard shard = *shard_of(other.record.run.spec);
    if (shard.count != first_shard.count)
      throw usage_error("merge: " + name_of(first) + " and " + name_of(other) +
                        " split the same sweeps into different shard counts (" +
                        std::to_string(first_shard.count) + " vs " + std::to_string(shard.count) +
                        "); merge the shards of one job, all with the same N in --shard I/N");
    if (shard.index == shard_of(shards[i - 1]->record.run.spec)->index)
      throw usage_error("merge: shard " + to_string(shard) + " is both " + name_of(*shards[i - 1]) +
                        " and " + name_of(other) + "; pass only the store of the run to keep");
    if (other.record.run.machine.gpu.name != first.record.run.machine.gpu.name)
      throw usage_error("merge: the shards of `" + command + "` ran on different GPUs: " +
                        name_of(first) + " on " + first.record.run.machine.gpu.name + ", " +
                        name_of(other) + " on " + other.record.run.machine.gpu.name +
                        "; merge shards of one GPU model (their roofs differ)");
  }

  // Every point once.
  std::map<std::pair<std::string, int>, const SourcedRun*> measured;
  RunRecord merged;
  for (const SourcedRun* shard : shards) {
    for (const Point& point : shard->record.points) {
      const auto [at, inserted] = measured.emplace(std::make_pair(point.sweep, point.seq), shard);
      if (!inserted)
        throw usage_error("merge: point " + std::to_string(point.seq) + " of sweep " + point.sweep +
                          " is in both " + name_of(*at->second) + " and " + name_of(*shard) +
                          "; each point must be measured by one shard: pass only one of them");
      Point copy = point;
      copy.id = 0;
      copy.details["measured_by"] = {{"run_uuid", shard->record.run.uuid},
                                     {"host", shard->record.run.host},
                                     {"gpu_uuid", shard->record.run.machine.gpu.uuid}};
      merged.points.push_back(std::move(copy));
    }
  }
  // Sweep by sweep in the spec's order, then by seq.
  std::map<std::string, std::size_t> sweep_order;
  std::vector<std::pair<std::string, std::size_t>> sweep_sizes;
  if (job.spec.contains("sweeps") && job.spec.at("sweeps").is_array())
    for (const json& sweep : job.spec.at("sweeps")) {
      const std::string name = sweep.value("name", std::string());
      sweep_order.emplace(name, sweep_order.size());
      sweep_sizes.emplace_back(name, sweep.value("points", json::array()).size());
    }
  auto order_of = [&](const Point& p) {
    const auto it = sweep_order.find(p.sweep);
    return std::make_pair(it == sweep_order.end() ? sweep_order.size() : it->second, p.seq);
  };
  std::stable_sort(merged.points.begin(), merged.points.end(),
                   [&](const Point& a, const Point& b) { return order_of(a) < order_of(b); });

  Run& run = merged.run;
  run = new_run(command_line);
  run.spec = job.spec;
  run.spec["merged_from"] = json::array();
  run.started_at = first.record.run.started_at;
  run.finished_at.clear();
  std::set<int> present_shards;
  for (const SourcedRun* shard : shards) {
    const Run& from = shard->record.run;
    run.spec["merged_from"].push_back(
        {{"uuid", from.uuid},
         {"host", from.host},
         {"gpu", {{"name", from.machine.gpu.name}, {"uuid", from.machine.gpu.uuid}}},
         {"command_line", from.command_line},
         {"shard", to_json(*shard_of(from.spec))},
         {"status", from.status},
         {"started_at", from.started_at},
         {"finished_at", from.finished_at}});
    present_shards.insert(shard_of(from.spec)->index);
    run.started_at = std::min(run.started_at, from.started_at);
    run.finished_at = std::max(run.finished_at, from.finished_at);
  }
  if (run.finished_at.empty()) run.finished_at = utc_now_iso8601();
  run.machine = first.record.run.machine;

  // Complete only with every point of every sweep.
  std::string missing;
  for (const auto& [name, size] : sweep_sizes) {
    std::vector<int> seqs;
    for (int seq = 0; seq < static_cast<int>(size); ++seq)
      if (!measured.count({name, seq})) seqs.push_back(seq);
    if (!seqs.empty())
      missing += "; sweep " + name + ": " + std::to_string(seqs.size()) + " of " +
                 std::to_string(size) + " points missing (seq " + seq_list(seqs) + ")";
  }
  run.status = to_string(missing.empty() ? RunStatus::complete : RunStatus::partial);
  if (!missing.empty()) {
    std::vector<int> absent;
    for (int i = 0; i < first_shard.count; ++i)
      if (!present_shards.count(i)) absent.push_back(i);
    std::string shards_text;
    for (int i : absent)
      shards_text += (shards_text.empty() ? "" : ", ") + to_string(Shard{i, first_shard.count});
    notes.push_back("merge: the run of `" + command + "` is partial: " +
                    (absent.empty() ? std::string("every shard is here but some are unfinished")
                                    : "no run of shard " + shards_text) +
                    missing + "; measure them (--resume the shard's run) and merge again");
  }
  return merged;
}

}  // namespace

MergeOutcome merge_shard_runs(const std::vector<SourcedRun>& inputs,
                              const std::string& command_line) {
  std::map<std::string, const SourcedRun*> by_uuid;
  for (const SourcedRun& input : inputs) {
    const auto [at, inserted] = by_uuid.emplace(input.record.run.uuid, &input);
    if (!inserted)
      throw usage_error("merge: run " + short_uuid(input.record.run.uuid) + " is in both " +
                        at->second->source + " and " + input.source +
                        "; pass each store once (a copied store holds the same runs)");
  }

  MergeOutcome outcome;
  std::vector<Job> jobs;
  std::vector<RunRecord> copies;
  for (const SourcedRun& input : inputs) {
    if (!shard_of(input.record.run.spec)) {
      copies.push_back(input.record);
      continue;
    }
    const json spec = spec_without_shard(input.record.run.spec);
    auto job = std::find_if(jobs.begin(), jobs.end(), [&](const Job& j) { return j.spec == spec; });
    if (job == jobs.end()) {
      // A sweep of the same name measured with another spec: shards of two commands
      // that were meant to be one job.
      for (const Job& other : jobs) {
        std::set<std::string> shared;
        const std::set<std::string> mine = sweep_names(spec);
        for (const std::string& name : sweep_names(other.spec))
          if (mine.count(name)) shared.insert(name);
        if (shared.empty()) continue;
        const SourcedRun& them = *other.shards.front();
        throw usage_error("merge: " + name_of(them) + " and " + name_of(input) +
                          " measured sweep " + *shared.begin() + " with different specs (" +
                          first_difference(other.spec, spec, "spec") + "): `" +
                          them.record.run.command_line + "` vs `" + input.record.run.command_line +
                          "`; merge only shards of one job, the same command apart from --shard");
      }
      jobs.push_back({spec, {}});
      job = jobs.end() - 1;
    }
    job->shards.push_back(&input);
    ++outcome.shard_runs;
  }
  for (const Job& job : jobs) outcome.runs.push_back(merge_job(job, command_line, outcome.notes));
  outcome.merged_jobs = static_cast<int>(jobs.size());
  outcome.runs.insert(outcome.runs.end(), copies.begin(), copies.end());
  return outcome;
}

}  // namespace timeroof::cli
