# Web-search flow sizes (DCTCP paper, Alizadeh et al., SIGCOMM 2010), as the
# CDF points the HPCC simulator's traffic generator uses:
# alibaba-edu/High-Precision-Congestion-Control, traffic_gen/WebSearch_distribution.txt
# (also used by ConWeave's simulator).
# Columns: flow size in bytes, cumulative percent. Sizes between points are
# interpolated linearly, as that generator does.
0 0
10000 15
20000 20
30000 30
50000 40
80000 53
200000 60
1000000 70
2000000 80
5000000 90
10000000 97
30000000 100
