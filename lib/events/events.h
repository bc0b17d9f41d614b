// SPDX-License-Identifier: BSD-3-Clause
// flowcop::events: the flow event stream, and its JSON-lines log, without ever stalling the data plane.
//
// Each lcore emit()s fixed-size Events into one single-producer rte_ring per subscriber (no syscall,
// no lock, no allocation, no read-modify-write atomic). Subscribers are the JSON writer (one thread
// drains its rings about every millisecond, formats JSON lines into one large batch and writes it
// with write(2)) and other consumers such as the IPFIX exporter (lib/ipfix). When a consumer cannot
// keep up its rings fill and its events are dropped and counted; when the output fails, the lost
// events are counted too. No EAL is needed: rings live in memory this library allocates.
// See event.h (the record and line format), stream.h (subscribing), producer.h (the lcore side) and
// writer.h (the JSON thread and the file).
#pragma once

#include <events/event.h>
#include <events/producer.h>
#include <events/stream.h>
#include <events/writer.h>
