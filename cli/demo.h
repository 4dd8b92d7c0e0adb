/* `mla demo`: one DeepSeek-V3.2-shaped attention layer step on synthetic data, every stage timed
 * and checked (CPU: float64 references; CUDA: the CPU backend on the same inputs). */
#ifndef MLA_DEMO_H
#define MLA_DEMO_H

/* `mla demo ...` (argv[0] = "demo"); returns the exit code (0 all stages ran and passed, 1 a stage
 * was unsupported, failed or did not check out, 2 wrong usage). */
int mla_demo_command(int argc, char **argv);

#endif
