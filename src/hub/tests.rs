use std::sync::Mutex;

use super::*;

/// Stands in for a session: keeps the frames it gets.
struct Collector(Arc<Mutex<Vec<String>>>);

impl Actor for Collector {
    type Context = Context<Self>;
}

impl Handler<Outbound> for Collector {
    type Result = ();
    fn handle(&mut self, Outbound(text): Outbound, _: &mut Context<Self>) {
        self.0.lock().unwrap().push(text.to_string());
    }
}

fn event(project: i64, seq: u64) -> NumberedEvent {
    NumberedEvent {
        project: ProjectId(project),
        run: RunId(7),
        seq,
        text: Arc::from(format!("frame {seq}")),
    }
}

#[actix::test]
async fn written_frames_reach_the_subscribers_of_their_project_in_order() {
    let work = Arc::new(WorkCounters::default());
    let hubs = HubRegistry::new(&work);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let elsewhere = Arc::new(Mutex::new(Vec::new()));
    hubs.subscribe(
        ProjectId(1),
        1,
        Collector(Arc::clone(&seen)).start().recipient(),
    );
    hubs.subscribe(
        ProjectId(2),
        2,
        Collector(Arc::clone(&elsewhere)).start().recipient(),
    );
    hubs.offer(vec![event(1, 10), event(1, 11), event(2, 5)]);
    hubs.relayed(BusFrame {
        project: ProjectId(1),
        run: RunId(7),
        seq: 12,
        text: Arc::from("frame 12"),
    });
    hubs.caught_up(ProjectId(1)).await.unwrap();
    hubs.caught_up(ProjectId(2)).await.unwrap();
    // The collectors handle what the hubs handed them before they answer a later message.
    while seen.lock().unwrap().len() < 3 || elsewhere.lock().unwrap().is_empty() {
        actix::clock::sleep(std::time::Duration::from_millis(5)).await;
    }
    assert_eq!(*seen.lock().unwrap(), ["frame 10", "frame 11", "frame 12"]);
    assert_eq!(*elsewhere.lock().unwrap(), ["frame 5"]);
    let handed = (work.count().frames, work.count().frame_bytes);
    assert_eq!(
        handed,
        (4, 8 + 8 + 8 + 7),
        "each frame handed over, counted"
    );
}

#[actix::test]
async fn a_hub_left_without_subscribers_retires_and_never_with_a_message_unhandled() {
    let hubs = HubRegistry::new(&Arc::default());
    let seen = Arc::new(Mutex::new(Vec::new()));
    hubs.subscribe(
        ProjectId(1),
        1,
        Collector(Arc::clone(&seen)).start().recipient(),
    );
    hubs.caught_up(ProjectId(1)).await.unwrap();
    assert_eq!(hubs.live(), 1, "a subscriber keeps its hub");

    let listed = {
        let hubs = hubs.lock();
        let listed = &hubs[&ProjectId(1)];
        (listed.hub.clone(), Arc::clone(&listed.handled))
    };
    hubs.lock().get_mut(&ProjectId(1)).unwrap().sent += 1;
    assert!(
        !hubs.retire(ProjectId(1), &listed.0),
        "a message on its way keeps the hub"
    );
    listed.1.fetch_add(1, Ordering::SeqCst);
    hubs.unsubscribe(ProjectId(1), 1);
    for _ in 0..500 {
        if hubs.live() == 0 {
            assert!(!hubs.retire(ProjectId(1), &listed.0), "already gone");
            hubs.caught_up(ProjectId(1)).await.unwrap();
            return;
        }
        actix::clock::sleep(std::time::Duration::from_millis(5)).await;
    }
    panic!("the hub left alone never retired");
}
