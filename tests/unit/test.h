/* SPDX-License-Identifier: MIT */
/* A tiny host unit-test framework (tests/unit/main.c runs what TEST() registers).
 *
 *   TEST(mm_add_merges) { EXPECT_EQ(f(1), 2); EXPECT_TRUE(ok); }
 *
 * Expectations do not stop the test; every failure prints file:line, the
 * expressions and their values. This header pulls in no libc header on purpose:
 * test files for hyp code that shadows libc names (snprintf) must stay clean. */
#ifndef UNIT_TEST_H
#define UNIT_TEST_H

void unit_register(const char *name, void (*fn)(void));
void unit_fail_eq(const char *file, int line, const char *ea, const char *eb,
		  unsigned long long a, unsigned long long b, int ne);
void unit_fail_true(const char *file, int line, const char *e);
void unit_fail_str(const char *file, int line, const char *ea, const char *eb,
		   const char *a, const char *b);
int unit_streq(const char *a, const char *b);
/* The running test fails (killed by SIGALRM) unless it ends or calls this
 * again with 0 within @seconds: for a test whose failure is a hang. */
void unit_deadline(unsigned int seconds);

/* fake CSR file (tests/unit/fake_csr.c), cleared before every test */
extern unsigned long fake_csr[4096];
extern unsigned long fake_csr_nr_writes[4096];
void fake_csr_reset(void);
/* a CSR with side effects: its reads and writes (csr_set/clear/swap: a read,
 * then a write) go to these instead of fake_csr[] until the next reset */
struct fake_csr_hook {
	unsigned long (*read)(unsigned int csr);
	void (*write)(unsigned int csr, unsigned long val);
};
void fake_csr_hook(unsigned int csr, const struct fake_csr_hook *h);

#define TEST(name)                                                            \
	static void test_##name(void);                                        \
	__attribute__((constructor)) static void register_##name(void)       \
	{                                                                     \
		unit_register(#name, test_##name);                            \
	}                                                                     \
	static void test_##name(void)

/* Values are compared as 64-bit patterns (so an int -3 equals a long -3, and
 * pointers compare by address); printed signed and in hex. */
#define UNIT_CMP_(a, b, sa, sb, ne)                                           \
	do {                                                                  \
		unsigned long long a_ = (unsigned long long)(a);              \
		unsigned long long b_ = (unsigned long long)(b);              \
		if ((a_ == b_) == !!(ne))                                     \
			unit_fail_eq(__FILE__, __LINE__, sa, sb, a_, b_, ne); \
	} while (0)

#define EXPECT_EQ(a, b) UNIT_CMP_(a, b, #a, #b, 0)
#define EXPECT_NE(a, b) UNIT_CMP_(a, b, #a, #b, 1)

#define EXPECT_TRUE(x)                                                        \
	do {                                                                  \
		if (!(x))                                                     \
			unit_fail_true(__FILE__, __LINE__, #x);               \
	} while (0)

#define EXPECT_FALSE(x) EXPECT_TRUE(!(x))

#define EXPECT_STREQ(a, b)                                                    \
	do {                                                                  \
		const char *sa_ = (a), *sb_ = (b);                            \
		if (!unit_streq(sa_, sb_))                                    \
			unit_fail_str(__FILE__, __LINE__, #a, #b, sa_, sb_);  \
	} while (0)

#endif
