/* SPDX-License-Identifier: MIT */
/* <sys/signal.h> for nolibc: what <signal.h> (and our compat header) has. */
#include <signal.h>
