/* SPDX-License-Identifier: MIT */
/* Internal error codes (negative). SBI codes appear only at the SBI boundary. */
#ifndef HYP_ERRNO_H
#define HYP_ERRNO_H
#define HYP_OK		0
#define HYP_ENOMEM	1
#define HYP_EINVAL	2
#define HYP_ENOENT	3
#define HYP_EFAULT	4
#define HYP_EBUSY	5
#define HYP_ENOTSUP	6
#define HYP_EEXIST	7
#define HYP_ERANGE	8
#define HYP_EIO		9	/* a host device taken out of service */
#endif
