#include "native/process.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <fstream>
#include <sstream>

extern char** environ;

namespace kvlayout::native {

bool start_process(Process& process) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, process.log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  std::vector<char*> argv;
  for (auto& a : process.argv) argv.push_back(a.data());
  argv.push_back(nullptr);
  const int failed = posix_spawnp(&process.pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (failed != 0) process.pid = -1;
  return failed == 0;
}

int wait_for(Process& process) {
  int status = 0;
  if (process.pid <= 0 || waitpid(process.pid, &status, 0) < 0) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string output(const Process& process) {
  std::ifstream in(process.log);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string command_line(const Process& process) {
  std::string s;
  for (const auto& a : process.argv) s += (s.empty() ? "" : " ") + a;
  return s;
}

}  // namespace kvlayout::native
