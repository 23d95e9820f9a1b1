/* SPDX-License-Identifier: MIT */
/* The VM slots, shared data every layer reads (no code: nothing it calls). */
#include <vm.h>

struct vm vms[VM_MAX];
unsigned int nr_vms;
void (*vm_console_out)(struct vm *vm, const char *buf, size_t len);
