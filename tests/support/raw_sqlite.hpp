// SQL through SQLite's plain C API, as another program would write a store: for
// tests that damage or inspect a file behind the store's back.
#pragma once

#include <sqlite3.h>

#include <stdexcept>
#include <string>

namespace timeroof::test {

inline void raw_exec(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open(path.c_str(), &db);
  if (rc == SQLITE_OK) rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr);
  const std::string message = db != nullptr ? sqlite3_errmsg(db) : "out of memory";
  sqlite3_close(db);
  if (rc != SQLITE_OK) throw std::runtime_error("raw sqlite: " + sql + ": " + message);
}

}  // namespace timeroof::test
