// The CLI verbs. Each takes the full argv and the index of its first argument (after the verb),
// returns the process exit code: 0 success, 1 failure (bad input, I/O), 2 usage error.
#pragma once

namespace chakraflow {

int run_link_command(int argc, char** argv, int first);
int run_convert_command(int argc, char** argv, int first);
int run_jsonize_command(int argc, char** argv, int first);
int run_synth_command(int argc, char** argv, int first);
int run_tile_command(int argc, char** argv, int first);
int run_run_command(int argc, char** argv, int first);
int run_feed_command(int argc, char** argv, int first);
int run_simulate_command(int argc, char** argv, int first);

}  // namespace chakraflow
