# SPDX-License-Identifier: BSD-3-Clause
# bash completion for flowcopctl (installed as /usr/local/share/bash-completion/completions/flowcopctl).
_flowcopctl()
{
    local cur prev
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD - 1]}
    case $prev in
    -p | --proto)
        mapfile -t COMPREPLY < <(compgen -W "tcp udp icmp icmpv6 sctp dccp gre udplite" -- "$cur")
        return ;;
    --state)
        mapfile -t COMPREPLY < <(compgen -W "SYN_SENT SYN_RECV ESTABLISHED FIN_WAIT CLOSE_WAIT LAST_ACK TIME_WAIT CLOSE SYN_SENT2" -- "$cur")
        return ;;
    -e | --event-mask)
        mapfile -t COMPREPLY < <(compgen -W "NEW UPDATE DESTROY NEW,DESTROY NEW,UPDATE,DESTROY" -- "$cur")
        return ;;
    -o | --output)
        mapfile -t COMPREPLY < <(compgen -W "json extended" -- "$cur")
        return ;;
    -f | --family)
        mapfile -t COMPREPLY < <(compgen -W "ipv4 ipv6" -- "$cur")
        return ;;
    --file-prefix)
        # The prefixes of DPDK instances that have a control socket.
        local d prefixes=()
        for d in /var/run/dpdk/*/ "${XDG_RUNTIME_DIR:-/tmp}"/dpdk/*/ /run/flowcop/dpdk/*/; do
            [ -S "$d/flowcop_ctl.sock" ] && prefixes+=("$(basename "$d")")
        done
        mapfile -t COMPREPLY < <(compgen -W "${prefixes[*]}" -- "$cur")
        return ;;
    --socket)
        mapfile -t COMPREPLY < <(compgen -f -- "$cur")
        return ;;
    -s | --src | --orig-src | -d | --dst | --orig-dst | --sport | --orig-port-src | --dport | --orig-port-dst | \
        --vlan | --zone | --lcore | -t | --timeout | -b | --buffer-size)
        return ;;
    esac
    mapfile -t COMPREPLY < <(compgen -W "-L --dump -C --count -S --stats -G --get -U --update -t --timeout -D --delete -F --flush -E --event -e --event-mask -b --buffer-size -p --proto
        -s --src -d --dst --sport --dport --state --vlan --zone --lcore -f --family -o --output --file-prefix --socket -h --help" \
        -- "$cur")
}
complete -F _flowcopctl flowcopctl
