#!/bin/bash
# Copies study directory $1 to $2 with every nodes[].iteration_compute_s removed from its measurement files,
# keeping every file's modification time (`mheta study --repredict` merges only the kept runs no older than
# a case's first forced run). `mheta study --out $2 --repredict` then predicts from the means alone.
set -e
src=$1; dst=$2
rm -rf "$dst"; cp -rp "$src" "$dst"
python3 - "$dst" <<'PY'
import json,glob,sys,os
n=0
for f in glob.glob(os.path.join(sys.argv[1],'*','*','measurements*.json')):
    st=os.stat(f)
    m=json.load(open(f))
    for node in m.get('nodes',[]):
        if node.pop('iteration_compute_s',None) is not None: n+=1
    json.dump(m,open(f,'w'))
    os.utime(f,(st.st_atime,st.st_mtime))
print('stripped',n,'node entries')
PY
