//! The background I/O thread behind `prefetch_block` (real asynchronous reads).
//!
//! Each out-of-core array that prefetches gets one worker thread, started on its first
//! prefetch and joined when the array is dropped. The array sends a job (the block's path and
//! shape, and a buffer to fill); the worker reads and decodes the block and sends the buffer
//! back. At most one job is in flight per array.

use std::path::PathBuf;
use std::sync::mpsc::{channel, Receiver, Sender, TryRecvError};
use std::thread::JoinHandle;

use super::block_file::{read_block_file, BlockShape, HEADER_BYTES};
use super::element::{decode, Element};
use super::OocError;

/// A block to read: where, what shape, and the buffer to decode it into.
pub(crate) struct Job<T> {
    pub path: PathBuf,
    pub shape: BlockShape,
    pub buffer: Vec<T>,
    /// Whether the block was written (its file must then exist).
    pub written: bool,
}

/// A finished job: the filled buffer (returned even on error, so it is reused).
pub(crate) type Done<T> = (Vec<T>, Result<(), OocError>);

pub(crate) struct Worker<T: Element> {
    jobs: Option<Sender<Job<T>>>,
    done: Receiver<Done<T>>,
    /// A result collected early by `poll`.
    ready: Option<Done<T>>,
    thread: Option<JoinHandle<()>>,
}

impl<T: Element> Worker<T> {
    pub(crate) fn spawn(array: &str) -> Result<Worker<T>, OocError> {
        let (jobs, job_rx) = channel::<Job<T>>();
        let (done_tx, done) = channel::<Done<T>>();
        let thread = std::thread::Builder::new()
            .name(format!("mheta-ooc-{array}"))
            .spawn(move || {
                let mut scratch = Vec::new();
                for mut job in job_rx {
                    let result = read_into(&job, &mut scratch);
                    if let Ok(()) = result {
                        let values = job.shape.payload_bytes() / T::SIZE;
                        job.buffer.resize(values, T::default());
                        decode(&scratch[HEADER_BYTES..], &mut job.buffer);
                    }
                    if done_tx.send((job.buffer, result)).is_err() {
                        break;
                    }
                }
            })
            .map_err(|_| OocError::PrefetchThread {
                array: array.to_string(),
            })?;
        Ok(Worker {
            jobs: Some(jobs),
            done,
            ready: None,
            thread: Some(thread),
        })
    }

    /// Hand a job to the worker.
    pub(crate) fn submit(&mut self, job: Job<T>, array: &str) -> Result<(), OocError> {
        let gone = || OocError::PrefetchThread {
            array: array.to_string(),
        };
        self.jobs
            .as_ref()
            .ok_or_else(gone)?
            .send(job)
            .map_err(|_| gone())
    }

    /// Whether the job in flight has finished (without blocking).
    pub(crate) fn poll(&mut self) -> bool {
        if self.ready.is_none() {
            match self.done.try_recv() {
                Ok(done) => self.ready = Some(done),
                Err(TryRecvError::Empty | TryRecvError::Disconnected) => {}
            }
        }
        self.ready.is_some()
    }

    /// Block until the job in flight has finished.
    pub(crate) fn finish(&mut self, array: &str) -> Result<Done<T>, OocError> {
        match self.ready.take() {
            Some(done) => Ok(done),
            None => self.done.recv().map_err(|_| OocError::PrefetchThread {
                array: array.to_string(),
            }),
        }
    }
}

fn read_into<T>(job: &Job<T>, scratch: &mut Vec<u8>) -> Result<(), OocError> {
    read_block_file(&job.path, job.shape, scratch, job.written).map(|_| ())
}

impl<T: Element> Drop for Worker<T> {
    fn drop(&mut self) {
        // Closing the job channel ends the worker's loop.
        self.jobs = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
