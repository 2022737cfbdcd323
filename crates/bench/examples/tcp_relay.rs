//! A zero-logic TCP relay (tokio, one worker thread, like Tessera's benchmark setting): the floor
//! of what any proxy that owns a client connection and a backend connection costs per query.
//! `cargo run --release -p tessera-bench --example tcp_relay -- LISTEN_ADDR BACKEND_ADDR`
//! then `tessera-bench --mysql BACKEND --target relay=LISTEN_ADDR,pid=<its pid>`.

use tokio::io::copy_bidirectional;
use tokio::net::{TcpListener, TcpStream};

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [listen, backend] = args.as_slice() else {
        eprintln!("usage: tcp_relay LISTEN_ADDR BACKEND_ADDR");
        std::process::exit(2);
    };
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    rt.block_on(serve(listen.clone(), backend.clone()))
}

async fn serve(listen: String, backend: String) -> std::io::Result<()> {
    let listener = TcpListener::bind(&listen).await?;
    eprintln!("relaying {} -> {backend}", listener.local_addr()?);
    loop {
        let (mut client, _) = listener.accept().await?;
        let backend = backend.clone();
        tokio::spawn(async move {
            let Ok(mut server) = TcpStream::connect(&backend).await else {
                return;
            };
            let _ = client.set_nodelay(true);
            let _ = server.set_nodelay(true);
            let _ = copy_bidirectional(&mut client, &mut server).await;
        });
    }
}
