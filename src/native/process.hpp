#pragma once
// Running a program (a compiler, Graphviz's dot) without a shell: argv as given, its standard output and
// error into a file, started with posix_spawnp so it is found on PATH.
#include <string>
#include <sys/types.h>
#include <vector>

namespace kvlayout::native {

struct Process {
  std::vector<std::string> argv;
  std::string log;  // the program's stdout and stderr
  pid_t pid = -1;
};

// Starts argv with its output sent to `log`. @post pid > 0, or false when the program cannot be started.
bool start_process(Process& process);
// Waits for it: the exit status, or -1 when it did not exit normally.
int wait_for(Process& process);
// The program's output (the log file).
std::string output(const Process& process);
std::string command_line(const Process& process);

}  // namespace kvlayout::native
