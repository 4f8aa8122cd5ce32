/* SPDX-License-Identifier: BSD-3-Clause
 *
 * wire_verdicts: a test tool, not a product program. It reads UDP payloads written as
 * text2pcap input (lines "OFFSET  HEX HEX ...", packets separated by blank lines) and
 * prints, one line per packet, the reference decoder's verdict on it: "-" when
 * wire_hdr_decode() accepts it, else the reason of the first rule broken
 * (wire_reason_str()). tests/wireshark_e2e.sh compares the dissector's reasons with these.
 *
 *   wire_verdicts FILE
 *
 * Exit 0; 2 for a file that cannot be read or a packet longer than 9000 bytes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire.h"

#define PKT_MAX 9000

static void verdict(const unsigned char *buf, size_t len)
{
	struct wire_pkt pkt;
	enum wire_reason why = WIRE_REASON_NONE;

	if (wire_hdr_decode(buf, len, &pkt, &why) == 0)
		puts("-");
	else
		puts(wire_reason_str(why));
}

int main(int argc, char **argv)
{
	static unsigned char buf[PKT_MAX];
	char line[1024];
	size_t len = 0;
	FILE *f;

	if (argc != 2) {
		fprintf(stderr, "usage: wire_verdicts FILE\n");
		return 2;
	}
	f = fopen(argv[1], "r");
	if (!f) {
		perror(argv[1]);
		return 2;
	}
	while (fgets(line, sizeof(line), f)) {
		const char *s = strchr(line, ' ');
		unsigned int byte;
		int used;

		if (line[0] == '\n') {
			if (len)
				verdict(buf, len);
			len = 0;
			continue;
		}
		while (s && sscanf(s, " %2x%n", &byte, &used) == 1) {
			if (len == PKT_MAX) {
				fprintf(stderr, "wire_verdicts: a packet beyond %d bytes\n", PKT_MAX);
				fclose(f);
				return 2;
			}
			buf[len++] = (unsigned char)byte;
			s += used;
		}
	}
	if (len)
		verdict(buf, len);
	fclose(f);
	return 0;
}
