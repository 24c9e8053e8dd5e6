# The engine benchmark's dumbbell (`pep sim bench`, crates/pep-sim/src/bench.rs)
# in ns-2, for the speed comparison (scripts/ns2-vs-pep.sh):
#
#   ns scripts/ns2-dumbbell.tcl FLOWS SECONDS
#
# Two routers joined by 100 Mbit/s, 250 ms, a 1000-packet DropTail queue;
# per flow a sender and a receiver host on 100 Mbit/s, 5 ms links with
# 100-packet queues; NewReno bulk flows, 1000-byte payloads plus 40-byte
# headers, initial window 2, minimum RTO 200 ms, a 16 MiB window, a sink
# that ACKs every segment; flow i starts at (10 i mod 1000) ms. The agent
# settings are those `pep sim ns2` writes for that scenario (its ns-2
# translation, crates/pep-sim/src/ns2.rs), DropTail limits one higher as
# there (ns-2's DropTail holds limit - 1 waiting).
#
# Prints the wall time of the set-up (nodes, links, agents, routes: ns-2
# computes its routes when the run starts, so the first event's time is
# taken as the end of the set-up) and of the run apart, and the flows'
# goodput.

if {$argc != 2} {
    puts stderr "usage: ns ns2-dumbbell.tcl FLOWS SECONDS"
    exit 2
}
set flows [lindex $argv 0]
set seconds [lindex $argv 1]
set t0 [clock milliseconds]

set ns [new Simulator]
global defaultRNG
$defaultRNG seed 1

set r1 [$ns node]
set r2 [$ns node]
$ns duplex-link $r1 $r2 100Mb 250ms DropTail
$ns queue-limit $r1 $r2 1001
$ns queue-limit $r2 $r1 1001

for {set i 0} {$i < $flows} {incr i} {
    set s($i) [$ns node]
    set d($i) [$ns node]
    $ns duplex-link $s($i) $r1 100Mb 5ms DropTail
    $ns queue-limit $s($i) $r1 101
    $ns queue-limit $r1 $s($i) 101
    $ns duplex-link $r2 $d($i) 100Mb 5ms DropTail
    $ns queue-limit $r2 $d($i) 101
    $ns queue-limit $d($i) $r2 101

    set tcp($i) [new Agent/TCP/Newreno]
    $tcp($i) set packetSize_ 1000
    $tcp($i) set tcpip_base_hdr_size_ 40
    $tcp($i) set windowInit_ 2
    $tcp($i) set window_ 16777
    $tcp($i) set minrto_ 0.2
    $tcp($i) set rtxcur_init_ 1.0
    $tcp($i) set maxrto_ 60.0
    $tcp($i) set tcpTick_ 0.001
    $tcp($i) set syn_ false
    $tcp($i) set maxburst_ 0
    $tcp($i) set fid_ $i
    set sink($i) [new Agent/TCPSink]
    $ns attach-agent $s($i) $tcp($i)
    $ns attach-agent $d($i) $sink($i)
    $ns connect $tcp($i) $sink($i)
    set ftp($i) [new Application/FTP]
    $ftp($i) attach-agent $tcp($i)
    $ns at [expr {($i * 10 % 1000) / 1000.0}] "$ftp($i) start"
}

# The first event: routes are computed by then.
proc started {} {
    global t1
    set t1 [clock milliseconds]
}
$ns at 0.0 "started"

proc finish {} {
    global ns flows seconds tcp t0 t1
    set t2 [clock milliseconds]
    set bytes 0
    for {set i 0} {$i < $flows} {incr i} {
        set a [expr {[$tcp($i) set ack_] + 1}]
        if {$a > 0} { set bytes [expr {$bytes + $a * 1000}] }
    }
    puts [format "setup_s %.3f" [expr {($t1 - $t0) / 1000.0}]]
    puts [format "run_s %.3f" [expr {($t2 - $t1) / 1000.0}]]
    puts [format "goodput_mbps %.2f" [expr {$bytes * 8.0 / $seconds / 1e6}]]
    exit 0
}
$ns at $seconds "finish"
$ns run
