/* SPDX-License-Identifier: MIT */
/* The device models every VM gets, in the order of SNAP_DEVICES
 * (include/abi/snapshot_devices.h): a DEVICE section's index is its model's
 * place here. */
#include <vio_mmio.h>
#include <vm.h>

#define DEVICE_OPS(index, NAME, name)	[index] = &name##_ops,
const struct vdev_ops *const vdev_all[] = { SNAP_DEVICES(DEVICE_OPS) };
const unsigned int vdev_count = ARRAY_SIZE(vdev_all);

/* The virtio models a VIRTIO section may name (SNAP_VIO_MODELS). */
#define VIO_MODEL(NAME, name, id)	&name##_model,
const struct vio_model *const vio_models[] = { SNAP_VIO_MODELS(VIO_MODEL) };
const unsigned int vio_model_count = ARRAY_SIZE(vio_models);
