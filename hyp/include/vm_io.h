/* SPDX-License-Identifier: MIT */
/* A VM's I/O devices from its description (hyp/lifecycle/vm_io.c): each disk
 * a virtio-blk model over the host disk the launcher gave it, each NIC a
 * virtio-net model on a port of its switch (docs/virtio.md, "The I/O path"). */
#ifndef HYP_VM_IO_H
#define HYP_VM_IO_H
#include <vm_lifecycle.h>

struct vm;

/** vm_io_attach() - give @vm the disks and NICs @d names, in guest slots
 *  0.. (disks first, so the first disk is the guest's vda). On failure
 *  nothing of it stays attached and *@why says why: a host disk that is not
 *  there, is another VM's, or a switch that does not exist. VM creation,
 *  under its lock. */
int vm_io_attach(struct vm *vm, const struct vm_desc *d, const char **why);
/** vm_io_detach() - take @vm's NICs off their switches (waits for frames
 *  being delivered to them) and give its host disks back. Before its device
 *  models are freed (vio_detach_all()), after vio_quiesce(). */
void vm_io_detach(struct vm *vm);
#endif
