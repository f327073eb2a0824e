# Helpers the bench scripts share: `. "$(dirname "$0")/lib.sh"`.

# The median of the numbers on standard input (whitespace-separated; the
# mean of the two middle ones for an even count).
median() {
    tr -s ' \t' '\n\n' | grep -v '^$' | sort -g |
        awk '{a[NR] = $1} END {if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2}'
}
