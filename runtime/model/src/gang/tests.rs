//! Hand-simulated mixes.
use super::experiment::Experiment;
use super::*;

#[test]
#[ignore]
fn print_experiments() {
    for e in [Experiment::Baseline, Experiment::CnRange, Experiment::IoFrequency] {
        let t = std::time::Instant::now();
        for v in e.run(1, &Config::default()).unwrap() {
            for o in &v.rows {
                println!("{} {} {} {:.0} {:.0}", v.variant, o.mode.name(), o.method.name(), o.att, o.end_time);
            }
        }
        println!("{:?}", t.elapsed());
    }
}

#[test]
#[ignore]
fn debug_p() {
    let jobs = MixSpec::baseline(128).generate(1);
    for mode in Mode::ALL {
        let o = simulate(&jobs, mode, Method::PBased, &Config::default()).unwrap();
        println!("{mode:?} {} {}", o.att, o.end_time);
    }
}
