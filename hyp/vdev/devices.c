/* SPDX-License-Identifier: MIT */
/* The device models every VM gets, in the order of SNAP_DEVICES
 * (include/abi/snapshot_devices.h): a DEVICE section's index is its model's
 * place here. */
#include <vm.h>

#define DEVICE_OPS(index, NAME, name)	[index] = &name##_ops,
const struct vdev_ops *const vdev_all[] = { SNAP_DEVICES(DEVICE_OPS) };
const unsigned int vdev_count = ARRAY_SIZE(vdev_all);
