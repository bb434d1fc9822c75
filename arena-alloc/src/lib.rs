#![doc = include_str!("../README.md")]

mod sync;
