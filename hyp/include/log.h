/* SPDX-License-Identifier: MIT */
/* The hypervisor's own messages on the host UART, and the one lock every line
 * written there takes (guest lines too, through log_tagged()). */
#ifndef HYP_LOG_H
#define HYP_LOG_H
#include <types.h>

/** pr_info() - print one hypervisor line, prefixed "carapace: ". */
void pr_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/** hyp_panic() - a broken hypervisor invariant: print and stop the whole machine. */
void hyp_panic(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/** log_tagged() - write "[tag] text" (or more text of the line @owner left
 *  unfinished); @end_of_line ends the line. Lines of different owners never mix. */
void log_tagged(const void *owner, const char *tag, const char *text, size_t len,
		bool end_of_line);

#define HYP_ASSERT(c) do { if (!(c)) hyp_panic("assertion '%s' failed at %s:%d", #c, __FILE__, __LINE__); } while (0)
#endif
