/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Prints the sizes and field offsets of the structures of georeduce.h that the Python
 * package mirrors with ctypes (python/georeduce/_lib.py), as one JSON object:
 * {"gr_config": {"size": S, "fields": {"job": 0, ...}}, ...}. tests/python/test_layout.py
 * compares them with the ctypes declarations.
 */
#include <stddef.h>
#include <stdio.h>

#include "georeduce.h"

#define BEGIN(s) printf("%s\"" #s "\": {\"size\": %zu, \"fields\": {", first_struct ? "" : \
			", ", sizeof(struct s)), first_struct = 0, first = 1
#define FIELD(s, f) printf("%s\"" #f "\": %zu", first ? "" : ", ", offsetof(struct s, f)), \
			first = 0
#define END() printf("}}")

int
main(void)
{
	int first_struct = 1, first;

	printf("{");
	BEGIN(gr_tree);
	FIELD(gr_tree, id);
	FIELD(gr_tree, chunk_first);
	FIELD(gr_tree, chunk_count);
	FIELD(gr_tree, slots);
	FIELD(gr_tree, window);
	END();
	BEGIN(gr_config);
	FIELD(gr_config, job);
	FIELD(gr_config, epoch);
	FIELD(gr_config, dtype);
	FIELD(gr_config, elements);
	FIELD(gr_config, chunk_elements);
	FIELD(gr_config, worker_id);
	FIELD(gr_config, worker_ipv4);
	FIELD(gr_config, worker_port);
	FIELD(gr_config, gateway_id);
	FIELD(gr_config, gateway_ipv4);
	FIELD(gr_config, gateway_base_port);
	FIELD(gr_config, gateway_ports);
	FIELD(gr_config, n_trees);
	FIELD(gr_config, trees);
	FIELD(gr_config, cset_blocks);
	FIELD(gr_config, mcast_send);
	FIELD(gr_config, mcast_stream);
	FIELD(gr_config, mcast_rate_gbps);
	FIELD(gr_config, n_origins);
	FIELD(gr_config, origins);
	FIELD(gr_config, origin_streams);
	FIELD(gr_config, mcast_rounds_ahead);
	FIELD(gr_config, tree_gateways);
	FIELD(gr_config, lan_dtype);
	FIELD(gr_config, forget_results);
	FIELD(gr_config, revision);
	FIELD(gr_config, tree_rate_gbps);
	END();
	BEGIN(gr_gateway);
	FIELD(gr_gateway, id);
	FIELD(gr_gateway, ipv4);
	FIELD(gr_gateway, base_port);
	FIELD(gr_gateway, ports);
	END();
	BEGIN(gr_options);
	FIELD(gr_options, window);
	FIELD(gr_options, timeout_ms);
	FIELD(gr_options, average);
	FIELD(gr_options, progress);
	FIELD(gr_options, progress_arg);
	FIELD(gr_options, progress_ms);
	FIELD(gr_options, rto_min_ms);
	FIELD(gr_options, rto_max_ms);
	FIELD(gr_options, rto_initial_ms);
	FIELD(gr_options, csets);
	FIELD(gr_options, rate_gbps);
	FIELD(gr_options, resume);
	FIELD(gr_options, cancel);
	FIELD(gr_options, cancel_arg);
	FIELD(gr_options, follow_rtt);
	END();
	BEGIN(gr_join_opts);
	FIELD(gr_join_opts, control);
	FIELD(gr_join_opts, cert);
	FIELD(gr_join_opts, key);
	FIELD(gr_join_opts, ca);
	FIELD(gr_join_opts, server_name);
	FIELD(gr_join_opts, job);
	FIELD(gr_join_opts, worker_id);
	FIELD(gr_join_opts, timeout_ms);
	FIELD(gr_join_opts, crl);
	END();
	BEGIN(gr_control_opts);
	FIELD(gr_control_opts, control);
	FIELD(gr_control_opts, cert);
	FIELD(gr_control_opts, key);
	FIELD(gr_control_opts, ca);
	FIELD(gr_control_opts, server_name);
	FIELD(gr_control_opts, timeout_ms);
	FIELD(gr_control_opts, crl);
	END();
	BEGIN(gr_stats);
	FIELD(gr_stats, calls);
	FIELD(gr_stats, calls_ok);
	FIELD(gr_stats, timeouts);
	FIELD(gr_stats, contribs_sent);
	FIELD(gr_stats, contribs_retx);
	FIELD(gr_stats, nacks_sent);
	FIELD(gr_stats, results);
	FIELD(gr_stats, acks);
	FIELD(gr_stats, nack_contribs);
	FIELD(gr_stats, probes);
	FIELD(gr_stats, duplicates);
	FIELD(gr_stats, stale);
	FIELD(gr_stats, invalid);
	FIELD(gr_stats, send_errors);
	FIELD(gr_stats, srtt_us);
	FIELD(gr_stats, rttvar_us);
	FIELD(gr_stats, path_srtt_us);
	FIELD(gr_stats, t1_us);
	FIELD(gr_stats, superseded);
	FIELD(gr_stats, latest_round);
	FIELD(gr_stats, mcast_sent);
	FIELD(gr_stats, mcast_received);
	FIELD(gr_stats, mcast_late);
	FIELD(gr_stats, mcast_too_far);
	FIELD(gr_stats, mcast_skipped);
	FIELD(gr_stats, cancels);
	FIELD(gr_stats, mcast_nacks_sent);
	FIELD(gr_stats, mcast_repaired);
	FIELD(gr_stats, kept_answers);
	FIELD(gr_stats, kept_misses);
	FIELD(gr_stats, held_asked);
	FIELD(gr_stats, retx_fast);
	FIELD(gr_stats, asks_unanswered);
	FIELD(gr_stats, tree_windows);
	FIELD(gr_stats, tree_rtt_min_us);
	END();
	printf("}\n");
	return 0;
}
