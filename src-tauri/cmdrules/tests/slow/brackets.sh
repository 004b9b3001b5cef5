e[emks"]"K$((mks"]"K$1e[$6tee$[te$6tee[ee[$tee[$7t(y{   ee[$P$$P$( ic>a )ee[$6tes"]"K$((mks"]"K$1e[$6tee$[te$6tee[ee[$tee[$7t(y{   ee[$P$$P$( ic>a )ee[$6tee[ee[$tee[$6Z zg"
${X~:,%$(rm y)}" && ct(6]$EO
F$) $p)kzt;;e[$2e$EB3[66)[ )e[ee[$tee[$6Z zg"
${X~:,%$(rm y)}" && ct(6]$EO
F$) $p)kzt;;e[$2e$EB3[66)[ ))$())@#s