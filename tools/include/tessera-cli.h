/* SPDX-License-Identifier: MIT */
/*
 * What the C tools share on their command lines: one wording for every
 * usage error.  Include after defining PROGRAM (the tool's name).
 */
#ifndef TESSERA_CLI_H
#define TESSERA_CLI_H

#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* "PROGRAM: what is wrong" and where to look, on stderr. */
__attribute__((format(printf, 1, 2)))
static inline void usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, PROGRAM ": ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry '" PROGRAM " --help' for the options.\n");
}

/* What getopt_long() returned @c ('?' or ':') for, named. */
static inline void report_bad_option(int c, char *const argv[])
{
	const char *arg = argv[optind - 1];

	if (c == ':')
		usage_error("option '%s' needs a value", arg);
	else if (optopt && strncmp(arg, "--", 2))
		usage_error("unknown option '-%c'", optopt);
	else
		usage_error("unknown option '%s'", arg);
}

#endif /* TESSERA_CLI_H */
