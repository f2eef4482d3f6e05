/* test_io_crc32c.c - CRC-32C check values (docs/formats.md §1), hardware vs software
 * paths, extend, and TF's mask/unmask. */
#include "io/io.h"
#include "test_util.h"

typedef uint32_t (*crc_fn)(uint32_t, const void *, size_t);

static void check_vectors(crc_fn f) {
    uint8_t buf[32];
    CHECK_EQ_INT(f(0, "123456789", 9), 0xE3069283u);
    memset(buf, 0, 32);
    CHECK_EQ_INT(f(0, buf, 32), 0x8A9136AAu);
    memset(buf, 0xff, 32);
    CHECK_EQ_INT(f(0, buf, 32), 0x62A8AB43u);
    for (int i = 0; i < 32; i++) buf[i] = (uint8_t)i;
    CHECK_EQ_INT(f(0, buf, 32), 0x46DD794Eu);
    for (int i = 0; i < 32; i++) buf[i] = (uint8_t)(31 - i);
    CHECK_EQ_INT(f(0, buf, 32), 0x113FDB5Cu);
    CHECK_EQ_INT(f(0, "", 0), 0u);
}

static void test_io_crc32c__vectors_hw(void) { check_vectors(vg__crc32c_extend); }
static void test_io_crc32c__vectors_sw(void) { check_vectors(vg__crc32c_extend_sw); }

/* Every length and alignment agrees between the two paths, and extend == one shot. */
static void test_io_crc32c__paths_agree(void) {
    static uint8_t buf[5000]; /* several 768-byte blocks of the three-lane path */
    uint32_t x = 12345;
    for (size_t i = 0; i < sizeof buf; i++) buf[i] = (uint8_t)((x = x * 1103515245u + 12345u) >> 16);
    int bad = 0;
    for (size_t off = 0; off < 9; off++)
        for (size_t n = 0; n + off <= sizeof buf; n += (n < 40 ? 1 : n > 700 && n < 800 ? 3 : 37)) {
            uint32_t a = vg__crc32c_extend(0, buf + off, n), b = vg__crc32c_extend_sw(0, buf + off, n);
            if (a != b) bad++;
            size_t cut = n / 3;
            uint32_t e = vg__crc32c_extend(vg__crc32c_extend(0, buf + off, cut), buf + off + cut, n - cut);
            uint32_t es = vg__crc32c_extend_sw(vg__crc32c_extend_sw(0, buf + off, cut), buf + off + cut, n - cut);
            if (e != a || es != a) bad++;
        }
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(vg__crc32c_extend(vg__crc32c("1234", 4), "56789", 5), 0xE3069283u);
}

static void test_io_crc32c__mask(void) {
    CHECK_EQ_INT(vg__crc32c_mask(0), 0xA282EAD8u);
    CHECK_EQ_INT(vg__crc32c_mask(vg__crc32c("123456789", 9)), 0xC78AB0E5u);
    CHECK_EQ_INT(vg__crc32c_unmask(0xC78AB0E5u), 0xE3069283u);
    uint32_t v = 1;
    for (int i = 0; i < 100; i++, v = v * 2654435761u + 7) CHECK_EQ_INT(vg__crc32c_unmask(vg__crc32c_mask(v)), v);
    float f[4] = {0.0f, 0.5f, 2.0f, 3.0f};
    uint32_t want[4] = {0x3A117BA6u, 0x1F273806u, 0x4F78FD10u, 0xC382D6EFu};
    for (int i = 0; i < 4; i++) CHECK_EQ_INT(vg__crc32c_mask(vg__crc32c(&f[i], 4)), want[i]);
    uint8_t z[8] = {0};
    CHECK_EQ_INT(vg__crc32c_mask(vg__crc32c(z, 8)), 0x07980329u);
}

int main(void) {
    RUN_TEST(test_io_crc32c__vectors_hw);
    RUN_TEST(test_io_crc32c__vectors_sw);
    RUN_TEST(test_io_crc32c__paths_agree);
    RUN_TEST(test_io_crc32c__mask);
    TEST_MAIN_END();
}
