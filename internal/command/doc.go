// Package command is the worker's exec handler: it runs a program per tick attempt, without a shell, with the
// tick in its environment (TICK_*) and its payload on standard input, in a process group of its own that dies
// with the attempt, with the worker and at the end of the run's lease (package supervisor starts the programs
// on Linux). It also holds what keeps a worker's secrets from the programs it runs: the environment filter
// (Config.Env, Config.EnvAllow) and Harden.
package command
