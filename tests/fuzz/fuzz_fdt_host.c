/* SPDX-License-Identifier: MIT */
/* libFuzzer target: reading the host device tree, hyp/fdt/fdt_host.c
 * (docs/fuzzing.md, "More targets"), over libfdt's read API compiled from
 * Debian's linux-source. The DTB comes from OpenSBI, which got it from QEMU
 * and the operator's -dtb or tools/carapace-run: trusted more than a guest,
 * but a mistake in it must be refused, not turned into a wild access.
 *
 * One input is one DTB, copied into a heap block of exactly its size (a
 * read past it is an ASan report; shorter than a header: zero-padded to one). fdt_host_parse() has no
 * buffer size to check the header's totalsize against (the hypervisor
 * trusts it): when the header claims more than the input has, the harness
 * sets totalsize to the input's length, so the fuzzer's blobs stay inside
 * what libfdt is allowed to read.
 *
 * Checked: on failure a non-empty message; on success 1..HOST_MAX_HARTS
 * harts, 1..MM_MAX_RANGES memory ranges, reserved ranges within their array
 * and the DT itself among them, an rng-seed of at most 64 bytes, at most
 * HOST_MAX_VMS VMs each with a non-empty NUL-terminated name, NUL-terminated
 * bootargs, a known CFI policy and a kernel (and an initrd if named) that is
 * one of the registered images, image names NUL-terminated, unique and of a
 * non-zero size; the PLIC off RAM with 1..1023 sources and every hart's
 * S-mode context's registers inside its reg; at most HOST_MAX_SWITCHES
 * switches with valid, unique names;
 * per VM at most VM_MAX_DISKS disks and VM_MAX_NICS NICs; every PCI device
 * number (disks, uplinks) in 1..31 and used once; every NIC on a parsed
 * switch with a unicast, non-zero MAC no other NIC of that switch has; the
 * same result when parsed again. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libfdt.h>
#include <errno.h>
#include <fdt_host.h>
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


static struct host_info hi, hi2;

static const struct host_image *image(const char *name)
{
	for (unsigned int i = 0; i < hi.nr_images; i++)
		if (!strcmp(hi.images[i].name, name))
			return &hi.images[i];
	return NULL;
}

/* the PCIe bridge: what hyp/drivers/pci_host.c relies on without checking */
static void check_off_ram(uint64_t base, uint64_t size)
{
	for (unsigned int i = 0; i < hi.nr_mem; i++)
		CHECK(base + size <= hi.mem[i].base || hi.mem[i].base + hi.mem[i].size <= base);
}

static void check_window(const struct pci_window *w, uint64_t limit)
{
	if (!w->size)
		return;
	check_off_ram(w->cpu_base, w->size);
	CHECK(!w->used);
	CHECK(w->pci_base <= UINT64_MAX - w->size && w->cpu_base <= UINT64_MAX - w->size);
	CHECK(w->pci_base + w->size <= limit || limit == UINT64_MAX);
}

static void check_pci(const struct pci_host_desc *d)
{
	if (!d->present)
		return;
	CHECK(d->mem32.size || d->mem64.size);
	CHECK(d->bus_start <= d->bus_end && d->bus_end <= 255);
	CHECK(d->ecam_base <= UINT64_MAX - d->ecam_size);
	check_off_ram(d->ecam_base, d->ecam_size);
	CHECK((uint64_t)(d->bus_end - d->bus_start + 1) << 20 <= d->ecam_size);
	CHECK(d->nr_intx <= PCI_MAX_INTX);
	check_window(&d->mem32, 1ull << 32);
	check_window(&d->mem64, UINT64_MAX);
}

/* the PLIC: what hyp/drivers/plic_host.c relies on without checking */
static void check_plic(void)
{
	const struct plic_host_desc *d = &hi.plic;

	for (unsigned int h = 0; h < HOST_MAX_HARTS; h++) {
		uint32_t c = hi.plic_s_context[h];

		if (c == PLIC_NO_CONTEXT)
			continue;
		CHECK(d->present && h < hi.nr_harts && c < PLIC_MAX_CONTEXTS);
		CHECK(PLIC_CLAIM(c) + 4 <= d->size);
		CHECK(PLIC_ENABLE(c, PLIC_MAX_SOURCES - 1) + 4 <= d->size);
	}
	if (!d->present)
		return;
	CHECK(d->ndev >= 1 && d->ndev < PLIC_MAX_SOURCES);
	CHECK(d->size && d->base <= UINT64_MAX - d->size);
	check_off_ram(d->base, d->size);
}

/* the AIA: what hyp/boot/main.c, aplic_host.c and imsic_host.c rely on */
static void check_aia(void)
{
	const struct imsic_host_desc *m = &hi.imsic;
	const struct aplic_host_desc *a = &hi.aplic;

	for (unsigned int h = 0; h < HOST_MAX_HARTS; h++) {
		uint32_t pos = hi.imsic_hart_index[h];

		if (pos == IMSIC_NO_HART)
			continue;
		CHECK(m->present && h < hi.nr_harts);
		CHECK(imsic_s_file_pa(m, pos) - m->base + IMSIC_FILE_SIZE <= m->size);
	}
	CHECK(!a->present || m->present);
	if (m->present) {
		CHECK(m->num_ids >= IMSIC_MIN_IDS && m->num_ids <= IMSIC_MAX_IDS);
		CHECK((m->num_ids & 63) == 63 && (m->guest_ids & 63) == 63);
		CHECK(m->guest_ids >= IMSIC_MIN_IDS && m->guest_ids <= IMSIC_MAX_IDS);
		CHECK(m->guest_bits <= IMSIC_MAX_GUEST_BITS && m->phandle);
		CHECK(m->size && m->base <= UINT64_MAX - m->size && !(m->base % IMSIC_FILE_SIZE));
		check_off_ram(m->base, m->size);
	}
	if (a->present) {
		CHECK(a->num_sources >= 1 && a->num_sources < APLIC_MAX_SOURCES && a->phandle);
		CHECK(a->size >= APLIC_MIN_SIZE && a->base <= UINT64_MAX - a->size);
		check_off_ram(a->base, a->size);
	}
}

static bool switch_known(const char *name)
{
	for (unsigned int i = 0; i < hi.nr_switches; i++)
		if (!strcmp(hi.switches[i].name, name))
			return true;
	return false;
}

/* Switches, disks and NICs (issue 24). */
static void check_devices(void)
{
	uint32_t pci = 0;

	CHECK(hi.nr_switches <= HOST_MAX_SWITCHES);
	for (unsigned int i = 0; i < hi.nr_switches; i++) {
		const struct host_switch *sw = &hi.switches[i];
		size_t n = strnlen(sw->name, sizeof(sw->name));

		CHECK(n >= 1 && n < sizeof(sw->name));
		for (size_t c = 0; c < n; c++)
			CHECK((sw->name[c] >= 'a' && sw->name[c] <= 'z') ||
			      (sw->name[c] >= '0' && sw->name[c] <= '9') ||
			      sw->name[c] == '_' || sw->name[c] == '-');
		for (unsigned int j = 0; j < i; j++)
			CHECK(strcmp(hi.switches[j].name, sw->name));
		CHECK(sw->uplink_pci <= HOST_PCI_DEV_MAX);
		if (sw->uplink_pci) {
			CHECK(!(pci & (1U << sw->uplink_pci)));
			pci |= 1U << sw->uplink_pci;
		}
	}
	for (unsigned int v = 0; v < hi.nr_vms; v++) {
		const struct vm_desc *d = &hi.vms[v];

		CHECK(d->nr_disks <= VM_MAX_DISKS && d->nr_nics <= VM_MAX_NICS);
		for (unsigned int i = 0; i < d->nr_disks; i++) {
			uint8_t n = d->disks[i].pci_dev;

			CHECK(n >= HOST_PCI_DEV_MIN && n <= HOST_PCI_DEV_MAX);
			CHECK(!(pci & (1U << n)));
			pci |= 1U << n;
			CHECK(d->disks[i].iops <= VM_IO_RATE_MAX);
			CHECK(!d->disks[i].bandwidth ||
			      (d->disks[i].bandwidth >= VM_IO_BANDWIDTH_MIN &&
			       d->disks[i].bandwidth <= VM_IO_RATE_MAX));
		}
		for (unsigned int i = 0; i < d->nr_nics; i++) {
			const struct vm_nic_desc *nic = &d->nics[i];
			static const uint8_t zero[ETH_ALEN];

			CHECK(memchr(nic->sw, 0, sizeof(nic->sw)) && switch_known(nic->sw));
			CHECK(!(nic->mac[0] & 1) && memcmp(nic->mac, zero, ETH_ALEN));
			CHECK(nic->pps <= VM_IO_RATE_MAX);
			CHECK(!nic->bandwidth || (nic->bandwidth >= VM_IO_BANDWIDTH_MIN &&
						  nic->bandwidth <= VM_IO_RATE_MAX));
			for (unsigned int w = 0; w <= v; w++)
				for (unsigned int j = 0; j < (w < v ? hi.vms[w].nr_nics : i); j++)
					CHECK(strcmp(hi.vms[w].nics[j].sw, nic->sw) ||
					      memcmp(hi.vms[w].nics[j].mac, nic->mac, ETH_ALEN));
		}
	}
}

static void check_ok(const void *fdt)
{
	bool self = false;

	CHECK(hi.nr_harts >= 1 && hi.nr_harts <= HOST_MAX_HARTS);
	CHECK(hi.nr_mem >= 1 && hi.nr_mem <= MM_MAX_RANGES);
	CHECK(hi.nr_reserved >= 1 && hi.nr_reserved <= MM_MAX_RANGES);
	for (unsigned int i = 0; i < hi.nr_reserved; i++)
		self |= hi.reserved[i].base == (uint64_t)(uintptr_t)fdt &&
			hi.reserved[i].size == fdt_totalsize(fdt);
	CHECK(self);
	CHECK(hi.rng_seed_len <= sizeof(hi.rng_seed));
	CHECK(hi.nr_images <= HOST_MAX_IMAGES);
	for (unsigned int i = 0; i < hi.nr_images; i++) {
		const struct host_image *im = &hi.images[i];

		CHECK(memchr(im->name, 0, sizeof(im->name)) && im->name[0] && im->size);
		for (unsigned int j = 0; j < i; j++)
			CHECK(strcmp(hi.images[j].name, im->name));
	}
	CHECK(hi.nr_vms <= HOST_MAX_VMS);
	for (unsigned int i = 0; i < hi.nr_vms; i++) {
		const struct vm_desc *d = &hi.vms[i];

		CHECK(memchr(d->name, 0, sizeof(d->name)) && d->name[0]);
		CHECK(memchr(d->bootargs, 0, sizeof(d->bootargs)));
		CHECK(memchr(d->kernel, 0, sizeof(d->kernel)) && image(d->kernel));
		CHECK(memchr(d->initrd, 0, sizeof(d->initrd)));
		CHECK(!d->initrd[0] || image(d->initrd));
		CHECK((unsigned int)d->cfi <= CFI_POLICY_OFF);
	}
	check_pci(&hi.pci);
	check_plic();
	check_aia();
	check_devices();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *err = NULL, *err2 = NULL;
	uint8_t *fdt;
	size_t n;
	int rc, rc2;

	/* a block of exactly the input (zero-padded to a whole header), whose
	 * header claims no more than that */
	n = size < sizeof(struct fdt_header) ? sizeof(struct fdt_header) : size;
	fdt = malloc(n);
	CHECK(fdt);
	memset(fdt, 0, n);
	memcpy(fdt, data, size);
	if (fdt_totalsize(fdt) > n)
		fdt_set_totalsize(fdt, (uint32_t)n);

	rc = fdt_host_parse(fdt, &hi, &err);
	CHECK(err);
	if (fuzz_verbose())
		fprintf(stderr, "fuzz_fdt_host: %d %s (%u harts, %u mem, %u vms, %u images)\n", rc,
			err, hi.nr_harts, hi.nr_mem, hi.nr_vms, hi.nr_images);
	if (rc) {
		CHECK(rc < 0 && err[0]);
	} else {
		check_ok(fdt);
	}
	rc2 = fdt_host_parse(fdt, &hi2, &err2);
	CHECK(rc2 == rc && !strcmp(err, err2) && !memcmp(&hi, &hi2, sizeof(hi)));
	free(fdt);
	return 0;
}
