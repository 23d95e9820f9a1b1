/* SPDX-License-Identifier: MIT */
/* The device models every VM gets, in a stable order (snapshots rely on it). */
#include <vm.h>

const struct vdev_ops *const vdev_all[] = { &vuart_ops, &vplic_ops, &vmgenid_ops };
const unsigned int vdev_count = ARRAY_SIZE(vdev_all);
