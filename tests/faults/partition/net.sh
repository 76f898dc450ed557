# net.sh -- the partition suite's network (sourced by run.sh, never run): four
# network namespaces made for one run and deleted at its exit, a server's
# (srv), two clients' (a, b) and a router's (rtr) between them, each client
# and the server on a veth pair to the router:
#
#     srv 10.X.Y.1 --- .2 rtr .6 --- 10.X.Y.5 a
#                         rtr .10 -- 10.X.Y.9 b
#
#   net_up                 make them (names and subnet from $$, so runs side
#                          by side never share one), forwarding on in rtr
#   net_exec NS CMD...     CMD in namespace NS (srv, a, b, rtr)
#   net_cut KIND           cut A from the server (B keeps its path):
#                            linkdown  A's link down (its routes go with it)
#                            blackhole both ways: rtr drops A->srv and srv->A
#                            a_to_srv  rtr drops A's packets to the server only
#                            srv_to_a  rtr drops the server's packets to A only
#   net_heal KIND          undo net_cut KIND
#   net_down               delete every namespace made (and so their veths);
#                          registered with on_exit by net_up
#
# The drops are routing-policy rules of type blackhole in rtr (`ip rule add
# from S to D blackhole`): the packets vanish in the middle, neither end is
# told (no tc netem or iptables here).  Addresses: NET_SRV, NET_A, NET_B,
# NET_SUBNET (the /24, for pg_hba.conf).
NET_ID="pl$$"
NET_X=$((($$ >> 8) & 255)) NET_Y=$(($$ & 255))
NET_SUBNET="10.$NET_X.$NET_Y.0/24"
NET_SRV="10.$NET_X.$NET_Y.1" NET_A="10.$NET_X.$NET_Y.5" NET_B="10.$NET_X.$NET_Y.9"
NET_MADE=()

net_ns() { echo "$NET_ID-$1"; }
net_exec() {
	local ns="$1"
	shift
	ip netns exec "$(net_ns "$ns")" "$@"
}

# net_link NS HOST_ADDR ROUTER_ADDR -- a veth pair NS (eth0) -- rtr (to-NS),
# made inside the two namespaces (no name in the caller's namespace), a /30
net_link() {
	local ns="$1" host="$2" gw="$3" n r
	n="$(net_ns "$ns")" r="$(net_ns rtr)"
	ip link add eth0 netns "$n" type veth peer name "to-$ns" netns "$r"
	ip -n "$n" addr add "$host/30" dev eth0
	ip -n "$r" addr add "$gw/30" dev "to-$ns"
	ip -n "$n" link set eth0 up
	ip -n "$r" link set "to-$ns" up
	ip -n "$n" route add default via "$gw"
}

net_up() {
	local ns
	command -v ip >/dev/null || die "ip not found: install iproute2"
	[ "$(id -u)" = 0 ] || die "network namespaces need root (ip netns add)"
	on_exit net_down
	for ns in srv rtr a b; do
		ip netns add "$(net_ns "$ns")" || die "ip netns add $(net_ns "$ns") failed"
		NET_MADE+=("$(net_ns "$ns")")
		ip -n "$(net_ns "$ns")" link set lo up
	done
	net_exec rtr sysctl -qw net.ipv4.ip_forward=1
	net_link srv "$NET_SRV" "10.$NET_X.$NET_Y.2"
	net_link a "$NET_A" "10.$NET_X.$NET_Y.6"
	net_link b "$NET_B" "10.$NET_X.$NET_Y.10"
	net_reaches a && net_reaches b || die "the namespaces do not reach each other through $(net_ns rtr)"
}

# net_reaches NS -- NS reaches the server: a TCP connect to its closed port 1
# is refused (not timed out) within 2 s
net_reaches() {
	local out
	out="$(net_exec "$1" timeout 2 bash -c "exec 3<>/dev/tcp/$NET_SRV/1" 2>&1 || true)"
	[[ "$out" == *"Connection refused"* ]]
}

net_down() {
	local ns
	for ns in "${NET_MADE[@]}"; do ip netns del "$ns" 2>/dev/null || true; done
	NET_MADE=()
}

# net_rules add|del KIND -- the blackhole rules of KIND in rtr
net_rules() {
	local op="$1" r
	r="$(net_ns rtr)"
	case "$2" in
	blackhole | a_to_srv) ip -n "$r" rule "$op" from "$NET_A" to "$NET_SRV" blackhole pref 100 ;;
	esac
	case "$2" in
	blackhole | srv_to_a) ip -n "$r" rule "$op" from "$NET_SRV" to "$NET_A" blackhole pref 101 ;;
	esac
}

net_cut() {
	case "$1" in
	linkdown) ip -n "$(net_ns a)" link set eth0 down ;;
	blackhole | a_to_srv | srv_to_a) net_rules add "$1" ;;
	*) die "unknown cut '$1' (linkdown, blackhole, a_to_srv, srv_to_a)" ;;
	esac
}

net_heal() {
	case "$1" in
	linkdown)
		ip -n "$(net_ns a)" link set eth0 up
		ip -n "$(net_ns a)" route replace default via "10.$NET_X.$NET_Y.6"
		;;
	*) net_rules del "$1" ;;
	esac
}
