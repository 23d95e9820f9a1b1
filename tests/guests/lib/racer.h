/* SPDX-License-Identifier: MIT */
/* A second vCPU that runs one function again and again while the first does
 * something else: the races of the attack payloads (a guest rewriting its
 * rings, or resetting its device, while its other vCPU uses them). */
#ifndef GUEST_RACER_H
#define GUEST_RACER_H

#include "guest.h"

/* Start @fn(round) in a loop on another hart of this guest; false (and a
 * FAIL line of @test) if there is none or it does not start. */
bool racer_start(const char *test, void (*fn)(unsigned long round));
/* Stop the loop, wait until that hart is stopped; the rounds it ran. */
unsigned long racer_stop(void);
#endif
