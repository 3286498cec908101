# Replay: predict each iteration with that iteration's per-node stage computations (from the
# run's own trace), the rest of the measurements as recorded; average the predictions.
import json,collections,bisect,statistics as st,subprocess,sys,copy,os
M='mheta'; S='study/virtual-8/jacobi-prefetch-dc-8/structure.json'
D='96,91,222,218,226,225,457,465'
i=sys.argv[1]
t=json.load(open(f'tr{i}.json')); ev=t['traceEvents'] if isinstance(t,dict) else t
m=json.load(open(f'tm{i}.json'))
by=collections.defaultdict(list)
for e in ev:
    if e.get('ph')=='X': by[e['tid']].append(e)
per={}
for n in m['nodes']:
    r=n['rank']; es=by[r]
    starts=sorted(e['ts'] for e in es if e['name']=='section 0')
    d=collections.defaultdict(lambda: [0.0]*len(starts))
    for e in es:
        if e['name'].startswith('stage 0.'):
            k=bisect.bisect_right(starts,e['ts'])-1
            if k>=0: d[e['name']][k]+=e['dur']*1e-6
    per[r]=d
w=m['warm_up']; n_it=min(len(v) for d in per.values() for v in d.values())
def predict(mm):
    open('/tmp/jp/rep.json','w').write(json.dumps(mm))
    out=subprocess.run([M,'predict','--structure',S,'--measurements','/tmp/jp/rep.json','--distribution',D,'--json'],capture_output=True,text=True).stdout
    return json.loads(out)['prediction']['iteration_s']
preds=[]
for k in range(w, n_it):
    mm=copy.deepcopy(m)
    for n in mm['nodes']:
        for s in n['stages']:
            name=f"stage {s['section']}.{s['stage']}"
            if name in per[n['rank']]:
                s['compute_s']=per[n['rank']][name][k]/s['count']
    preds.append(predict(mm))
own=json.load(open(f'tt{i}.json'))['iteration_s']
print(f"run {i} own {own*1e3:.3f} self-pred {predict(m)*1e3:.3f} replay-mean {st.mean(preds)*1e3:.3f} over {len(preds)} iterations")
